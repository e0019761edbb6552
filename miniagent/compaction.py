"""Compaction: a long run's older messages replaced, in what is sent, by a summary the model writes
(DESIGN.md "Round 3 contracts", "Long runs").

``run_agent(compaction=Compaction(trigger_tokens=N))``: before each request, when the request
about to be sent would reach ``trigger_tokens`` input tokens, or would not fit
``context_max_chars``, the loop makes one summary request and commits the summary to the record
as a marked message (a ``messages.Summary``); the requests after it send the summary followed
by the newest whole units.

When: the input tokens of the next request are estimated from the last request's reported
``input_tokens`` plus the characters recorded since, at that request's own tokens per character;
when the last request reported none (or this run made none yet), as characters (system prompt,
tool specifications and messages) divided by ``CHARS_PER_TOKEN``.

Invariants:

- The record keeps every message; the summary is appended to it, nothing is removed. The view
  sent is derived from the record alone: the last summary, then the ``Summary.kept`` messages
  recorded before it, then every message after it (older summaries left out: the last one holds
  them). So a resumed session sends the same view as the run that wrote it, and every store
  persists the mark with the message.
- No call is separated from its result: the kept messages start at a unit (a user message, an
  answer, a tool-calling message with its results), and a summary is committed only before a
  request, when every call in the record has its result.
- Between two compactions the view only grows at its end: the request prefix is byte-stable and
  prompt caches keep hitting. With ``context_max_chars`` the view is trimmed (``Trimmer``, with
  slack) only when the summary and the kept units alone do not fit.
- The summary request is one ``ModelRequest``: the run's system prompt, no tools, and one user
  message holding the older part of the view as a transcript followed by ``SUMMARY_INSTRUCTION``.
  Calls and results go as text, not as tool blocks: the Messages API and Bedrock refuse tool
  blocks in a request without tools ("Requests which include tool_use or tool_result blocks must
  define tools"). It is cancellable like any turn (the cancel is checked on every event and after
  the stream; a cancelled summary commits nothing); what it used is added to the run's usage (it
  counts against the budgets, not against ``max_turns``).
- A summary is committed only whole: a stream that ended other than naturally, or without text,
  is dropped; that request then goes out uncompacted and the next one tries again. A second
  failure in a row raises (``IncompleteResponseError`` / ``EmptyResponseError``), as a turn
  would. An exception of the client propagates as a turn's does (nothing committed).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._log import Logger
from .budget import Tally
from .context import MessageWindow, Trimmer, message_chars
from .errors import EmptyResponseError, IncompleteResponseError
from .messages import Message, Summary
from .model import DoneEvent, ModelClient, ModelEvent, ModelRequest, TextEvent, ToolSpec, UsageEvent

if TYPE_CHECKING:  # annotations only: the core never starts a thread
    import threading

__all__ = [
    "CHARS_PER_TOKEN",
    "SUMMARY_INSTRUCTION",
    "SUMMARY_PREFIX",
    "Compaction",
    "Compactor",
    "compacted_view",
    "context_for",
    "summary_prompt",
]

_log = Logger("miniagent.compaction")

CHARS_PER_TOKEN = 4
"""Characters per token assumed when no request reported its input tokens (English text and
code run at about 3 to 4)."""

SUMMARY_PREFIX = (
    "[Summary of the earlier conversation, written when it grew too long to send whole; "
    "the messages after it follow on from it.]\n\n"
)
"""How the content of a summary message begins (what the model reads before the summary)."""

SUMMARY_INSTRUCTION = """\
The conversation above has grown too long to send whole. Write a summary of it that will \
replace it: the most recent messages will be sent after your summary as they are, so whoever \
continues must need nothing else from above. Keep:
- the user's goals and requests, and every constraint or preference they stated;
- the decisions made and why, and what was tried and did not work;
- every file path, command, name and identifier that may matter again;
- the open problems, the next steps, and where the work stopped;
- the tool results that are still needed, quoted exactly where they are short (errors, values).
Leave out what no longer matters. Write plain text, dense, in at most 500 words. Answer with the \
summary only, and call no tool."""
"""Our instruction for the summary request (``Compaction.instructions`` adds to it)."""


@dataclass(frozen=True, slots=True)
class Compaction:
    """When and how a run compacts what it sends (``run_agent(compaction=...)``).

    Args:
        trigger_tokens: compact before a request estimated to reach this many input tokens (an
            int >= 1). Leave room under the model's context window for one turn's growth, the
            summary request's instruction and the answer: about three quarters of the window.
        keep_chars: characters of the newest whole units sent as they are after the summary
            (an int >= 1; the newest unit is always kept, whatever its size). ``None``:
            ``trigger_tokens`` characters, about a quarter of the trigger at
            ``CHARS_PER_TOKEN``.
        instructions: more for the summary request, appended to ``SUMMARY_INSTRUCTION`` (e.g.
            "Keep every failing test name."); ``""``: none.

    Raises:
        ValueError: ``trigger_tokens`` or ``keep_chars`` not an int >= 1.
        TypeError: ``instructions`` is not a string.
    """

    trigger_tokens: int
    keep_chars: int | None = None
    instructions: str = ""

    def __post_init__(self) -> None:
        for name in ("trigger_tokens", "keep_chars"):
            value = getattr(self, name)
            if value is None and name == "keep_chars":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Compaction.{name} must be an int >= 1, got {value!r}")
        if not isinstance(self.instructions, str):
            kind = type(self.instructions).__name__
            raise TypeError(f"Compaction.instructions must be a string, not {kind}")

    @property
    def kept_chars(self) -> int:
        """``keep_chars``, or its default (``trigger_tokens`` characters)."""
        return self.trigger_tokens if self.keep_chars is None else self.keep_chars


def compacted_view(messages: Sequence[Message]) -> list[Message]:
    """What a compacting run sends for ``messages`` (before any ``context_max_chars`` trimming):
    the last summary, the ``Summary.kept`` messages before it, then every later message, older
    summaries left out; ``messages`` itself (as a new list) when it holds no summary."""
    for index in range(len(messages) - 1, -1, -1):
        summary = messages[index]
        if isinstance(summary, Summary):
            start = max(0, index - summary.kept)
            rest = [m for m in messages[start:] if not isinstance(m, Summary)]
            return [summary, *rest]
    return list(messages)


def summary_prompt(
    older: Sequence[Message], instructions: str = "", max_chars: int | None = None
) -> str | None:
    """The one user message of a summary request: ``older`` as a transcript, then
    ``SUMMARY_INSTRUCTION`` (and ``instructions``).

    With ``max_chars``, the oldest units of ``older`` are left out until the message fits in
    ``max_chars`` characters; ``None`` when not even the newest fits.
    """
    tail = "\n</conversation>\n\n" + SUMMARY_INSTRUCTION + (f"\n{instructions}" if instructions else "")
    head = "<conversation>\n"
    room = None if max_chars is None else max_chars - len(head) - len(tail)
    names = {call.id: call.name for message in older for call in message.tool_calls}
    units: list[str] = []
    size = 0
    for unit in reversed(_units(older)):
        text = "".join(_transcript_line(message, names) for message in unit)
        if room is not None and size + len(text) > room:
            break
        units.append(text)
        size += len(text)
    if not units:
        return None
    return head + "".join(reversed(units)).rstrip("\n") + tail


def _units(messages: Sequence[Message]) -> list[list[Message]]:
    units: list[list[Message]] = []
    for message in messages:
        if message.role == "tool" and units:
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _transcript_line(message: Message, names: dict[str, str]) -> str:
    """One message as transcript text (reasoning blocks are left out)."""
    if message.role == "user":
        return f"[user]\n{message.content}\n"
    if message.role == "tool":
        kind = "error from" if message.is_error else "result of"
        return f"[{kind} {names.get(message.tool_call_id or '', 'a tool')}]\n{message.content}\n"
    text = f"[assistant]\n{message.content}\n" if message.content.strip() else ""
    for call in message.tool_calls:
        arguments = json.dumps(call.input, ensure_ascii=False, separators=(",", ":"))
        text += f"[assistant called {call.name}] {arguments}\n"
    return text


def context_for(
    messages: list[Message],
    max_chars: int | None,
    compaction: Compaction | None,
    usage: Tally,
    system: str = "",
    specs: Iterable[ToolSpec] = (),
) -> Trimmer | Compactor | None:
    """What gives a run's requests their messages: a ``Compactor`` with ``compaction``, else a
    ``Trimmer`` with ``max_chars``, else ``None`` (the whole record is sent).

    Raises:
        TypeError: ``compaction`` is not a ``Compaction``.
        ValueError: ``max_chars < 1``.
    """
    if compaction is None:
        return Trimmer(messages, max_chars) if max_chars is not None else None
    if not isinstance(compaction, Compaction):
        raise TypeError(f"compaction must be a Compaction, not {type(compaction).__name__}")
    fixed = len(system)
    for spec in specs:
        fixed += len(spec.name) + len(spec.description) + len(json.dumps(spec.input_schema))
    return Compactor(messages, compaction, max_chars, usage, fixed)


class Compactor:
    """The loop's context when compacting: the compacted view of the record, when to compact,
    and the summary request with its marked message (see the module docstring).

    Args:
        messages: the record (the loop's list; only appended to while the compactor is used).
        compaction: the settings.
        max_chars: ``context_max_chars`` (the view is trimmed to it), or ``None``.
        usage: the run's usage so far (the loop's ``Tally``): read for the last request's input
            tokens, added to by the summary request.
        fixed_chars: characters sent with every request besides the messages (system prompt,
            tool specifications), for the estimate by characters.

    Raises:
        ValueError: ``max_chars < 1``.
    """

    def __init__(
        self,
        messages: list[Message],
        compaction: Compaction,
        max_chars: int | None,
        usage: Tally,
        fixed_chars: int = 0,
    ) -> None:
        self._record = messages
        self._compaction = compaction
        self._max_chars = max_chars
        self._usage = usage
        self._fixed = fixed_chars
        self._seen = 0
        self._view: list[Message] = []
        self._where: list[int] = []  # the record index of each message of the view
        self._chars = 0  # message_chars of the view
        self._trimmer = Trimmer(self._view, max_chars) if max_chars is not None else None
        self._sent: tuple[int, int, int, int] | None = None  # usage and view size at the last request
        self._failures = 0  # summaries dropped in a row

    # --- the view ---------------------------------------------------------------------------

    def _absorb(self) -> None:
        record = self._record
        view, where = self._view, self._where
        for index in range(self._seen, len(record)):
            message = record[index]
            if isinstance(message, Summary):
                self._rebuild(index)
                view, where = self._view, self._where
                continue
            view.append(message)
            where.append(index)
            self._chars += message_chars(message)
        self._seen = len(record)

    def _rebuild(self, index: int) -> None:
        """A new view (a new list: windows already handed out stay valid) from the summary at
        ``index`` of the record."""
        record = self._record
        summary = record[index]
        start = max(0, index - summary.kept) if isinstance(summary, Summary) else index
        view, where = [summary], [index]
        for position in range(start, index):
            if not isinstance(record[position], Summary):
                view.append(record[position])
                where.append(position)
        self._view, self._where = view, where
        self._chars = sum(map(message_chars, view))
        if self._max_chars is not None:
            self._trimmer = Trimmer(view, self._max_chars)

    def check_fits(self, message: Message) -> None:
        """Raise ``ValueError`` now if ``message`` alone cannot fit ``max_chars`` (before it is
        recorded)."""
        if self._trimmer is not None:
            self._trimmer.check_fits(message)

    def window(self) -> MessageWindow:
        """The messages of the next request: the compacted view, trimmed to ``max_chars``.

        Raises:
            ValueError: the newest unit alone is larger than ``max_chars``.
        """
        self._absorb()
        usage = self._usage
        self._sent = (usage.input, usage.requests, usage.unreported, self._chars)
        if self._trimmer is not None:
            return self._trimmer.window()
        return MessageWindow(self._view)

    # --- when -------------------------------------------------------------------------------

    def estimated_tokens(self) -> float:
        """The input tokens the next request is estimated to have (see the module docstring)."""
        self._absorb()
        usage, sent = self._usage, self._sent
        if sent is not None:
            tokens_before, requests, unreported, chars = sent
            tokens = usage.input - tokens_before
            if usage.requests > requests and usage.unreported == unreported and tokens > 0:
                return tokens + (self._chars - chars) * tokens / max(1, chars + self._fixed)
        return (self._chars + self._fixed) / CHARS_PER_TOKEN

    def due(self) -> bool:
        """Whether the next request should be compacted first: it reaches ``trigger_tokens`` or
        does not fit ``max_chars``, and there is something older than the kept units to
        summarise."""
        self._absorb()
        over = self._max_chars is not None and self._chars > self._max_chars
        if not over and self.estimated_tokens() < self._compaction.trigger_tokens:
            return False
        return self._cut() is not None

    def _cut(self) -> int | None:
        """The view index of the first kept message: the newest whole units within
        ``keep_chars`` (at least the newest unit); ``None`` when nothing but a summary is older."""
        view = self._view
        first = 1 if view and isinstance(view[0], Summary) else 0
        keep = self._compaction.kept_chars
        cut = len(view)
        size = unit = 0
        for index in range(len(view) - 1, first - 1, -1):
            unit += message_chars(view[index])
            if view[index].role == "tool" and index > first:
                continue
            if cut < len(view) and size + unit > keep:
                break
            size += unit
            unit = 0
            cut = index
        return cut if cut > first else None

    # --- the summary ------------------------------------------------------------------------

    def summarise(self, client: ModelClient, system: str, cancel: threading.Event | None) -> Summary | None:
        """Make the summary request and return the marked summary message to commit, or
        ``None``: cancelled (the caller checks the cancel), the first of two failed summaries in
        a row, or nothing to summarise.

        Raises:
            IncompleteResponseError: the second summary in a row ended other than naturally.
            EmptyResponseError: the second summary in a row was empty.
            Exception: what the client raised (not after a cancel).
        """
        self._absorb()
        cut = self._cut()
        if cut is None:
            return None
        older = self._view[:cut]
        prompt = summary_prompt(older, self._compaction.instructions, self._max_chars)
        if prompt is None:
            return None
        request = ModelRequest(system, (Message("user", prompt),), (), cancel, None)
        streamed = _stream_summary(client, request, cancel, self._usage)
        if streamed is None:
            return None
        text, ending = streamed
        if ending is not None or not text.strip():
            self._failed(text, ending)
            return None
        self._failures = 0
        kept = len(self._record) - self._where[cut]
        _log.info("compaction: %d messages summarised in %d characters, %d kept", cut, len(text), kept)
        return Summary(SUMMARY_PREFIX + text.strip(), kept)

    def _failed(self, text: str, ending: DoneEvent | None) -> None:
        """A summary that is not whole: dropped once, raised the second time in a row."""
        self._failures += 1
        if self._failures >= 2:
            self._failures = 0
            if ending is not None and ending.incomplete is not None:
                raise IncompleteResponseError(ending.incomplete, ending.stop_reason or "", text)
            raise EmptyResponseError()
        why = ending.incomplete if ending is not None else "empty"
        _log.warning("compaction: the summary was dropped (%s); this request goes uncompacted", why)


def _stream_summary(
    client: ModelClient, request: ModelRequest, cancel: threading.Event | None, usage: Tally
) -> tuple[str, DoneEvent | None] | None:
    """Stream the summary request into a string: ``(text, the DoneEvent that said it ended
    unnaturally, if one did)``, or ``None`` when cancelled. Tool calls and reasoning are ignored
    (none was offered). Usage is added as it arrives; a request that reported none counts as
    unreported."""
    parts: list[str] = []
    ending: DoneEvent | None = None
    events: Iterable[ModelEvent] | None = None
    reported = sent = False
    try:
        events = iter(client.stream(request))
        for event in events:
            sent = True
            if cancel is not None and cancel.is_set():
                return None
            if isinstance(event, TextEvent):
                parts.append(event.text)
            elif isinstance(event, UsageEvent):
                usage.add(event.usage)
                reported = True
            elif isinstance(event, DoneEvent) and event.incomplete is not None:
                ending = event
        sent = True
    except Exception:
        if cancel is not None and cancel.is_set():
            return None
        raise
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
        if sent and not reported:
            usage.add_unreported()
    if cancel is not None and cancel.is_set():
        return None
    return "".join(parts), ending
