"""Compaction (DESIGN.md "Round 3 contracts", "Long runs"): when it happens, the summary request,
the marked message in the record, the compacted view sent after it (also after a resume), and
cancel, budgets, failures and trimming around it."""

from __future__ import annotations

import random
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from miniagent import (
    Compaction,
    DoneEvent,
    EmptyResponseError,
    IncompleteResponseError,
    JSONLSession,
    Message,
    ModelRequest,
    SessionError,
    ToolCall,
    load_session,
    message_chars,
    run_agent,
)
from miniagent.compaction import SUMMARY_INSTRUCTION, SUMMARY_PREFIX, compacted_view, summary_prompt
from miniagent.messages import Summary, message_from_json, message_to_json
from miniagent.testing import ScriptedClient
from tests.helpers import assert_every_call_answered_once, recording_tool
from tests.window_model import WindowModel


def reading(size_of: Any = lambda turn: 600, last: int | None = None) -> Any:
    """An answer function: a ``read`` call per turn (its result ``size_of(turn)`` characters),
    and ``"done"`` at turn ``last``."""

    def answer(turn: int, request: ModelRequest) -> list[object]:
        if last is not None and turn >= last:
            return ["done"]
        return [ToolCall(f"c{turn}", "read", {"n": size_of(turn)})]

    return answer


def read_tool() -> Any:
    from miniagent import ToolResult

    return recording_tool("read", action=lambda arguments, cancel: ToolResult("r" * arguments["n"]))


def run(client: Any, **options: Any) -> Any:
    options.setdefault("tools", [read_tool()])
    options.setdefault("system", "You fix builds.")
    options.setdefault("user", "fix the build")
    options.setdefault("max_turns", 40)
    return run_agent(client=client, **options)


def summaries(messages: list[Message]) -> list[Summary]:
    return [m for m in messages if isinstance(m, Summary)]


# --- the settings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"trigger_tokens": 0},
        {"trigger_tokens": True},
        {"trigger_tokens": 1.5},
        {"trigger_tokens": 10, "keep_chars": 0},
    ],
)
def test_bad_settings_are_refused(arguments: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="Compaction"):
        Compaction(**arguments)


def test_instructions_must_be_text_and_compaction_a_compaction(tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        Compaction(10, instructions=3)  # type: ignore[arg-type]
    session = tmp_path / "s.jsonl"
    with pytest.raises(TypeError, match="Compaction"):
        run(ScriptedClient([]), compaction=1000, session_path=session)
    assert not session.exists()  # refused before anything was written


def test_keep_chars_defaults_to_the_trigger_in_characters() -> None:
    assert Compaction(8_000).kept_chars == 8_000
    assert Compaction(8_000, keep_chars=100).kept_chars == 100


# --- when and what ----------------------------------------------------------------------------


def test_below_the_trigger_nothing_changes() -> None:
    model = WindowModel(32_000, reading(last=5))
    result = run(model, compaction=Compaction(30_000))
    assert result.stop_reason == "complete"
    assert not model.summaries and not summaries(result.messages)
    for before, after in zip(model.sent, model.sent[1:], strict=False):
        assert after.messages[: len(before.messages)] == before.messages


def test_the_reported_input_tokens_trigger_one_summary_request_and_a_marked_message() -> None:
    model = WindowModel(4_000, reading(last=12))
    result = run(model, compaction=Compaction(2_000, keep_chars=1_500, instructions="Keep test names."))
    assert result.stop_reason == "complete"
    marked = summaries(result.messages)
    assert marked and len(model.summaries) == len(marked)  # one request per compaction
    request = model.summaries[0]
    assert len(request.messages) == 1 and request.messages[0].role == "user"
    prompt = request.messages[0].content
    assert prompt.startswith("<conversation>\n[user]\nfix the build\n")
    assert '[assistant called read] {"n":600}' in prompt and "[result of read]\n" in prompt
    assert prompt.endswith(SUMMARY_INSTRUCTION + "\nKeep test names.")
    summary = marked[0]
    assert summary.role == "user" and summary.content == SUMMARY_PREFIX + "S" * 1_500
    # The request after it: the summary, then the kept messages, whole units, the newest last.
    index = result.messages.index(summary)
    after = model.sent[model.sent.index(request) + 1]
    kept = result.messages[index - summary.kept : index]
    assert after.messages == [summary, *kept]
    assert kept[0].role == "assistant" and kept[-1].role == "tool"
    assert sum(map(message_chars, kept)) <= 1_500 or len(kept) == 2
    assert not model.over_window
    assert_every_call_answered_once(result.messages)


def test_the_request_that_triggers_is_estimated_before_it_is_sent() -> None:
    # Each turn adds about 700 characters (~230 tokens at this model's 3 per token): the loop
    # compacts before the request that would reach the trigger, never after sending it.
    model = WindowModel(100_000, reading(last=30))
    run(model, compaction=Compaction(2_000, keep_chars=1_000))
    assert model.summaries
    assert all(s.tokens < 2_000 for s in model.turn_requests)


def test_between_compactions_the_request_prefix_is_byte_stable() -> None:
    model = WindowModel(8_000, reading(last=60))
    run(model, compaction=Compaction(3_000, keep_chars=2_000), max_turns=80)
    assert len(model.summaries) >= 3
    for before, after in zip(model.sent, model.sent[1:], strict=False):
        if not before.summary and not after.summary:  # no compaction between them
            assert after.messages[: len(before.messages)] == before.messages


def test_a_client_that_reports_no_usage_compacts_by_characters() -> None:
    model = WindowModel(1_000_000, reading(last=20), report_usage=False)
    result = run(model, compaction=Compaction(1_500, keep_chars=1_000))
    assert model.summaries
    # 1,500 tokens at 4 characters each: no turn request carries 6,000 characters or more.
    for sent in model.turn_requests:
        assert sum(map(message_chars, sent.messages)) + len("You fix builds.") < 6_000 + 700
    assert result.usage.unreported_requests == len(model.sent)


def test_newest_unit_is_kept_whatever_its_size() -> None:
    sizes = [100, 100, 100, 100, 5_000]
    model = WindowModel(100_000, reading(lambda turn: sizes[turn], last=5))
    result = run(model, compaction=Compaction(1_500, keep_chars=10))
    (summary,) = summaries(result.messages)
    assert summary.kept == 2  # the call and its 5,000-character result
    after = model.sent[-1]
    assert [m.role for m in after.messages] == ["user", "assistant", "tool"]


def test_nothing_older_than_the_kept_units_means_no_summary_request() -> None:
    # Every unit fits in keep_chars: there is nothing to summarise, so no extra request is made.
    model = WindowModel(100_000, reading(last=6))
    result = run(model, compaction=Compaction(10, keep_chars=1_000_000))
    assert not model.summaries and not summaries(result.messages)


def test_on_message_sees_the_summary_and_on_event_does_not_see_its_stream() -> None:
    events: list[Any] = []
    committed: list[Message] = []
    model = WindowModel(4_000, reading(last=10))
    result = run(
        model,
        compaction=Compaction(1_500, keep_chars=800),
        on_event=events.append,
        on_message=committed.append,
    )
    assert committed == result.messages and summaries(committed)
    texts = "".join(getattr(e, "text", "") for e in events)
    assert "S" * 100 not in texts


def test_max_turns_counts_the_turns_only_and_the_budget_counts_the_summary() -> None:
    model = WindowModel(4_000, reading())
    result = run(model, compaction=Compaction(1_500, keep_chars=800), max_turns=12)
    assert result.stop_reason == "max_turns"
    assert len(model.turn_requests) == 12 and model.summaries
    assert result.usage.requests == len(model.sent)
    assert result.usage.input_tokens == sum(s.tokens for s in model.sent)


def spent_before_the_first_summary() -> int:
    """Tokens (input + output) a 12-turn run uses before its first summary request."""
    replay = WindowModel(4_000, reading())
    run(replay, compaction=Compaction(1_500, keep_chars=800), max_turns=12)
    return sum(s.tokens + 10 for s in replay.sent[: replay.sent.index(replay.summaries[0])])


def test_a_summary_that_reaches_the_budget_stops_the_run_before_the_next_turn() -> None:
    model = WindowModel(4_000, reading())
    budget = spent_before_the_first_summary() + 1
    result = run(model, compaction=Compaction(1_500, keep_chars=800), max_turns=12, max_total_tokens=budget)
    assert result.stop_reason == "max_budget"
    assert model.sent[-1].summary  # the summary request was the last one made
    assert isinstance(result.messages[-1], Summary)  # and it was whole: committed


def test_no_summary_request_when_the_budget_is_already_reached() -> None:
    model = WindowModel(4_000, reading())
    budget = spent_before_the_first_summary()
    result = run(model, compaction=Compaction(1_500, keep_chars=800), max_turns=12, max_total_tokens=budget)
    assert result.stop_reason == "max_budget"
    assert not model.summaries and not summaries(result.messages)


# --- cancel and failures ----------------------------------------------------------------------


@pytest.mark.parametrize("when", ["first event", "after the stream", "raised"])
def test_a_cancelled_summary_commits_nothing(tmp_path: Path, when: str) -> None:
    cancel = threading.Event()

    def summary(request: ModelRequest) -> list[object]:
        if when == "first event":
            cancel.set()
            return ["never", "seen"]
        if when == "raised":
            cancel.set()
            return ["part", ConnectionError("cut")]
        return ["whole summary", DoneEvent("end_turn"), cancel.set]  # set as the stream ends

    session = tmp_path / "s.jsonl"
    model = WindowModel(4_000, reading(), summary=summary)
    result = run(model, compaction=Compaction(1_500, keep_chars=800), cancel=cancel, session_path=session)
    assert result.stop_reason == "aborted"
    assert model.summaries and not summaries(result.messages)
    assert load_session(session) == result.messages
    assert_every_call_answered_once(result.messages)
    assert model.sent[-1].summary  # no turn request after the cancelled summary


def test_a_cut_summary_is_dropped_once_and_the_request_goes_uncompacted() -> None:
    outcomes = [["half a summ", DoneEvent("max_tokens", "max_output_tokens")], ["S" * 400]]

    def summary(request: ModelRequest) -> list[object]:
        return outcomes.pop(0)

    model = WindowModel(100_000, reading(last=12), summary=summary)
    result = run(model, compaction=Compaction(1_500, keep_chars=800))
    assert result.stop_reason == "complete"
    first, second = (model.sent.index(s) for s in model.summaries[:2])
    assert second == first + 2  # one turn request went out uncompacted between the two tries
    assert not isinstance(model.sent[first + 1].messages[0], Summary)
    (summary_message,) = summaries(result.messages)
    assert "half a summ" not in summary_message.content


@pytest.mark.parametrize(
    ("items", "error"),
    [
        ([["cut", DoneEvent("max_tokens", "max_output_tokens")]] * 2, IncompleteResponseError),
        ([[""]] * 2, EmptyResponseError),
    ],
)
def test_two_failed_summaries_in_a_row_raise(tmp_path: Path, items: list[list[object]], error: type) -> None:
    outcomes = list(items)
    session = tmp_path / "s.jsonl"
    model = WindowModel(100_000, reading(), summary=lambda request: outcomes.pop(0))
    with pytest.raises(error):
        run(model, compaction=Compaction(1_500, keep_chars=800), session_path=session)
    record = load_session(session)
    assert not summaries(record)
    assert_every_call_answered_once(record)
    assert len(model.summaries) == 2


def test_a_client_error_in_the_summary_request_propagates_with_nothing_committed(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"

    def summary(request: ModelRequest) -> list[object]:
        return ["part", ConnectionError("the server went away")]

    model = WindowModel(100_000, reading(), summary=summary)
    with pytest.raises(ConnectionError):
        run(model, compaction=Compaction(1_500, keep_chars=800), session_path=session)
    assert not summaries(load_session(session))


def test_tool_calls_in_a_summary_answer_are_ignored() -> None:
    model = WindowModel(
        100_000, reading(last=10), summary=lambda request: ["the summary", ToolCall("x", "read", {"n": 1})]
    )
    result = run(model, compaction=Compaction(1_500, keep_chars=800))
    assert summaries(result.messages)[0].content == SUMMARY_PREFIX + "the summary"
    assert_every_call_answered_once(result.messages)


# --- sessions and resume ----------------------------------------------------------------------


def test_a_resumed_session_sends_the_same_compacted_view(tmp_path: Path) -> None:
    compaction = Compaction(1_500, keep_chars=800)
    # One run of 16 turns...
    whole = WindowModel(100_000, reading())
    run(whole, compaction=compaction, max_turns=16, session_path=tmp_path / "a.jsonl")
    # ...and the same turns in two runs on one session (the second run resumes the first).
    first = WindowModel(100_000, reading())
    run(first, compaction=compaction, max_turns=8, session_path=tmp_path / "b.jsonl")
    second = WindowModel(100_000, lambda turn, request: reading()(turn + 8, request))
    result = run(second, compaction=compaction, max_turns=8, session_path=tmp_path / "b.jsonl", user="go on")
    assert summaries(load_session(tmp_path / "b.jsonl")) == summaries(result.messages)
    # The resumed run's first request is the compacted view of the record, then its user message.
    record_before = load_session(tmp_path / "b.jsonl")[: len(result.messages)]
    restored = record_before[: record_before.index(Message("user", "go on"))]
    assert second.sent[0].messages[:-1] == compacted_view(restored)
    assert summaries(restored)  # the first run compacted, so this checks the marked view
    assert isinstance(second.sent[0].messages[0], Summary)


def test_the_mark_survives_every_store_and_old_lines_still_load(tmp_path: Path) -> None:
    summary = Summary(SUMMARY_PREFIX + "s", 3)
    assert message_to_json(summary) == {"role": "user", "content": SUMMARY_PREFIX + "s", "summary_kept": 3}
    assert message_from_json(message_to_json(summary)) == summary
    assert type(message_from_json({"role": "user", "content": "old line"})) is Message
    assert summary != Message("user", SUMMARY_PREFIX + "s")  # a summary is not a plain user message
    assert Message("user", "x").to_json() == {"role": "user", "content": "x"}
    path = tmp_path / "s.jsonl"
    with JSONLSession(path) as store:
        store.append(summary)
    assert load_session(path) == [summary]
    from miniagent.stores import SQLiteSession

    database = SQLiteSession(tmp_path / "s.db", "run")
    database.append(summary)
    database.close()
    database = SQLiteSession(tmp_path / "s.db", "run")
    assert database.load() == [summary]
    database.close()
    path.write_text('{"role":"user","content":"x","summary_kept":-1}\n')
    with pytest.raises(SessionError, match="summary_kept"):
        load_session(path)


def test_compacted_view_of_a_record() -> None:
    u, a, u2 = Message("user", "u"), Message("assistant", "a"), Message("user", "u2")
    c = Message("assistant", "", (ToolCall("1", "t", {}),))
    r = Message("tool", "r", tool_call_id="1")
    s1 = Summary("S1", 2)
    assert compacted_view([u, a]) == [u, a]
    assert compacted_view([u, a, c, r, s1, a]) == [s1, c, r, a]
    # An older summary among the kept messages is left out: the newer one holds it.
    s2 = Summary("S2", 5)
    assert compacted_view([u, c, r, s1, a, u2, s2, a]) == [s2, c, r, a, u2, a]
    # A count larger than the record (an edited file) keeps what there is.
    assert compacted_view([u, Summary("S", 99)]) == [
        Summary("S", 99),
        u,
    ]


def test_summary_prompt_keeps_to_the_budget() -> None:
    older = [Message("user", "u" * 50), Message("assistant", "a" * 50), Message("user", "newest")]
    whole = summary_prompt(older)
    assert whole is not None and whole.count("[user]") == 2
    small = summary_prompt(older, max_chars=len(whole) - 1)
    assert small is not None and len(small) <= len(whole) - 1 and "u" * 50 not in small and "newest" in small
    assert summary_prompt(older, max_chars=10) is None


# --- context_max_chars ------------------------------------------------------------------------


def test_context_max_chars_bounds_every_request_and_compacts_before_trimming() -> None:
    model = WindowModel(1_000_000, reading(last=40))
    result = run(
        model, compaction=Compaction(1_000_000, keep_chars=1_500), context_max_chars=5_000, max_turns=50
    )
    assert result.stop_reason == "complete"
    assert model.summaries  # the character budget, not the token trigger, made it compact
    for sent in model.sent:
        assert sum(map(message_chars, sent.messages)) <= 5_000
        assert_every_call_answered_once(sent.messages)
    for sent in model.turn_requests:
        assert sent.messages[0].role == "user"  # the summary or the first user message: never trimmed


def test_a_user_message_larger_than_the_budget_is_refused_before_it_is_written(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    with pytest.raises(ValueError, match="cannot hold"):
        run(
            ScriptedClient([]),
            compaction=Compaction(100),
            context_max_chars=10,
            user="x" * 11,
            session_path=session,
        )
    assert not session.exists() or load_session(session) == []


# --- long runs --------------------------------------------------------------------------------


def test_500_turns_against_a_32k_window() -> None:
    rng = random.Random(31)
    sizes = [rng.choice([50, 200, 800, 2_000, 6_000]) for _ in range(500)]
    model = WindowModel(32_768, reading(lambda turn: sizes[turn], last=499))
    result = run(model, compaction=Compaction(24_000), max_turns=500)
    assert result.stop_reason == "complete"
    assert len(model.turn_requests) == 500
    assert model.over_window == []  # 0 requests over the window
    compactions = summaries(result.messages)
    assert len(model.summaries) == len(compactions) >= 10  # one extra request per compaction
    assert_every_call_answered_once(result.messages)
    assert [m for m in result.messages if not isinstance(m, Summary)][-1] == Message("assistant", "done")
    for sent in model.turn_requests:
        assert_every_call_answered_once(sent.messages)


# --- property: the record holds everything, no call is ever separated from its result --------

turn = st.one_of(
    st.lists(st.integers(0, 900), min_size=1, max_size=3).map(lambda sizes: ("calls", sizes)),
    st.integers(1, 300).map(lambda size: ("text", size)),
)
summary_outcome = st.sampled_from(["ok", "ok", "ok", "cut", "empty"])


def playing(script: list[tuple[str, Any]], prefix: str) -> Any:
    """An answer function that plays ``script`` (then answers in text)."""
    steps = iter(script)

    def answer(index: int, request: ModelRequest) -> list[object]:
        kind, value = next(steps, ("text", 5))
        if kind == "text":
            return ["t" * value]
        return [ToolCall(f"{prefix}c{index}_{i}", "read", {"n": n}) for i, n in enumerate(value)]

    return answer


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs=st.lists(st.lists(turn, min_size=1, max_size=12), min_size=1, max_size=3),
    trigger=st.integers(100, 2_000),
    keep=st.integers(1, 3_000),
    budget=st.one_of(st.none(), st.integers(1_000, 8_000)),
    outcomes=st.lists(summary_outcome, max_size=30),
)
def test_property_record_whole_and_calls_never_separated(
    runs: list[list[tuple[str, Any]]], trigger: int, keep: int, budget: int | None, outcomes: list[str]
) -> None:
    plays = iter(outcomes)

    def summary(request: ModelRequest) -> list[object]:
        outcome = next(plays, "ok")
        if outcome == "cut":
            return ["cut off", DoneEvent("max_tokens", "max_output_tokens")]
        return [""] if outcome == "empty" else ["S" * 200]

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.jsonl"
        committed: list[Message] = []
        for number, script in enumerate(runs):
            restored = load_session(path) if path.exists() else []
            model = WindowModel(10**9, playing(script, f"r{number}"), summary=summary)
            seen: list[Message] = []
            try:
                result = run(
                    model,
                    compaction=Compaction(trigger, keep_chars=keep),
                    context_max_chars=budget,
                    session_path=path,
                    on_message=seen.append,
                    user=f"task {number}",
                    max_turns=len(script) + 1,
                )
            except (IncompleteResponseError, EmptyResponseError):
                result = None
            except ValueError as error:  # a budget too small for the newest unit
                assert budget is not None and "cannot hold" in str(error)
                result = None
            record = load_session(path)
            committed += seen
            event(f"compacted: {bool(summaries(record))}")
            # The record holds every message ever committed, in order, and nothing else.
            assert record == committed
            assert record[: len(restored)] == restored
            if result is not None:
                assert result.messages == record
            assert_every_call_answered_once(record)
            for sent in model.sent:
                assert_every_call_answered_once(sent.messages)
                if budget is not None:
                    assert sum(map(message_chars, sent.messages)) <= budget
                if sent.summary:
                    continue
                # Every message sent is in the record (the summary is one of its messages).
                assert all(m in record for m in sent.messages)
