"""A model that sends garbage: odd text and odd tool calls through ``run_agent`` with a session.

Random turns of text deltas and tool calls whose texts, ids, names and inputs hold lone
surrogates, NUL, line and paragraph separators, quotes, backslashes, huge integers and deep
nesting; ids reused across turns; unknown names; ``input_error`` set. Invariants: the run
returns a stop reason (or raises ``EmptyResponseError`` for an empty turn, committing nothing);
the session file is valid UTF-8 JSONL and loads back equal to the run's record (as far as JSON can
hold it: a high surrogate followed by a low one comes back as the pair's character); every call is
answered exactly once. 150 examples in CI, 1,500 with ``MINIAGENT_STRESS_FULL=1``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stress_support import jsonl_lines_ok, scale, unanswered_calls

from miniagent import EmptyResponseError, Message, ToolCall, load_session, run_agent, tool
from miniagent.messages import message_from_json, message_to_json
from miniagent.testing import ScriptedClient

pytestmark = pytest.mark.timeout(300)

odd_text = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["\ud800", "\udcff", "a\x00b", "\u2028\u2029", "\r\n", '"\\', "\ufeff", "😀", ""]),
    st.lists(st.sampled_from(["\ud800", "x", "\n", "é", "\\u0000"]), max_size=8).map("".join),
)
values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(allow_nan=False), odd_text),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(odd_text, inner, max_size=3),
    max_leaves=10,
)


def json_round_trip(message: Message) -> Message:
    """What JSON can hold of a message: a high surrogate followed by a low one becomes the pair's
    character (no JSON text tells them apart); everything else is unchanged."""
    return message_from_json(json.loads(json.dumps(message_to_json(message))))


@tool
def echo(text: str = "") -> str:
    """Return the text.

    Args:
        text: the text.
    """
    return text + "\udcfe"


@st.composite
def scripts(draw: st.DrawFn) -> list[list[Any]]:
    turns: list[list[Any]] = []
    used: list[str] = []
    for turn in range(draw(st.integers(1, 5))):
        items: list[Any] = draw(st.lists(odd_text, max_size=3))
        for k in range(draw(st.integers(0, 3))):
            if used and draw(st.booleans()) and k == 0:
                call_id = draw(st.sampled_from(used))  # an id reused from an earlier turn
            else:
                call_id = f"{draw(odd_text)}#{turn}.{k}"
            used.append(call_id)
            name = draw(st.sampled_from(["echo", "nope", "", "\ud800"]))
            arguments = draw(
                st.one_of(st.just({"text": draw(odd_text)}), st.dictionaries(odd_text, values, max_size=3))
            )
            error = draw(st.one_of(st.none(), odd_text))
            items.append(ToolCall(call_id, name, arguments, error))
        turns.append(items)
    turns.append(["end"])
    return turns


@settings(max_examples=scale(150, 1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=scripts(), user=odd_text)
def test_garbage_from_the_model_keeps_the_session_whole(script: list[list[Any]], user: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        session = Path(folder) / "s.jsonl"
        client = ScriptedClient(script)
        try:
            result = run_agent(
                client=client,
                system="s",
                tools=[echo],
                user=user,
                max_turns=len(script),
                session_path=session,
            )
        except EmptyResponseError:
            messages = load_session(session)
            assert messages[-1].role in ("user", "tool")  # the empty turn committed nothing
        else:
            assert result.stop_reason in ("complete", "max_turns")
            assert load_session(session) == [json_round_trip(m) for m in result.messages]
        assert jsonl_lines_ok(session)
        session.read_bytes().decode("utf-8")
        assert unanswered_calls(load_session(session)) == []
