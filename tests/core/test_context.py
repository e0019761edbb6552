"""trim_context and message_chars, exactly as DESIGN.md says; the incremental Trimmer keeps its promises
and trims with slack."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniagent import Message, ToolCall, message_chars, trim_context
from miniagent.context import Trimmer

U = Message("user", "uuuu")  # 4
A = Message("assistant", "aaa")  # 3
C = Message("assistant", "x", (ToolCall("1", "read", {"p": "é"}),))  # 1 + 4 + len('{"p":"é"}')=9 -> 14
R = Message("tool", "rrrrr", tool_call_id="1")  # 5


def test_message_chars_counts_content_names_and_compact_json() -> None:
    assert message_chars(U) == 4
    assert message_chars(C) == 1 + 4 + 9
    assert message_chars(Message("assistant", "", (ToolCall("1", "t", {}),))) == 1 + 2


def test_longest_suffix_of_whole_units() -> None:
    history = [U, A, U, C, R, A]
    assert trim_context(history, 100) == history
    assert trim_context(history, 3) == [A]
    assert trim_context(history, 22) == [C, R, A]  # 14 + 5 + 3
    assert trim_context(history, 25) == [C, R, A]  # + U (4) = 26 > 25
    assert trim_context(history, 26) == [U, C, R, A]


def test_cut_falling_between_a_call_and_its_result_drops_the_whole_unit() -> None:
    history = [U, C, R]
    assert trim_context(history, 19) == [C, R]
    assert trim_context(history, 23) == [U, C, R]


def test_input_is_not_modified_and_a_new_list_is_returned() -> None:
    history = [U, A]
    result = trim_context(history, 100)
    assert result == history and result is not history
    assert history == [U, A]


def test_errors() -> None:
    with pytest.raises(ValueError):
        trim_context([U], 0)
    with pytest.raises(ValueError, match="cannot hold"):
        trim_context([U, C, R], 18)  # the newest unit is 19
    assert trim_context([], 1) == []


messages = st.lists(
    st.one_of(
        st.builds(lambda n: Message("user", "u" * n), st.integers(0, 9)),
        st.builds(lambda n: Message("assistant", "a" * n), st.integers(0, 9)),
        st.builds(lambda n: Message("assistant", "", (ToolCall("1", "t" * n, {}),)), st.integers(1, 5)),
        st.builds(lambda n: Message("tool", "r" * n, tool_call_id="1"), st.integers(0, 9)),
    ),
    max_size=25,
)


@settings(max_examples=300, deadline=None)
@given(messages, st.integers(1, 60))
def test_trimmer_keeps_trim_contexts_promises_at_every_step(history: list[Message], budget: int) -> None:
    # Whole units within the budget, the newest unit held, the same errors; never a longer
    # window than trim_context's; the start only moves forward; a fresh trimmer on the same
    # record (a resumed run) gives the same window.
    record: list[Message] = []
    trimmer = Trimmer(record, budget)
    previous_start = 0
    for message in history:
        record.append(message)
        try:
            expected: list[Message] | None = trim_context(record, budget)
        except ValueError:
            expected = None
        try:
            got: list[Message] | None = list(trimmer.window())
        except ValueError:
            got = None
        assert (got is None) == (expected is None)
        if got is None or expected is None:
            continue
        start = len(record) - len(got)
        assert record[start:] == got and len(got) <= len(expected)
        assert sum(map(message_chars, got)) <= budget
        assert start == 0 or record[start].role != "tool"
        assert start >= previous_start
        previous_start = start
        if len(expected) == len(record):
            assert got == record  # nothing to trim: the whole record
        assert list(Trimmer(list(record), budget).window()) == got


def test_trimming_with_slack_keeps_the_prefix_for_many_requests() -> None:
    # 200 turns of two 50-character units against a 2,000-character budget: trim_context moves
    # its start on every request once the budget is full; the trimmer moves it once per 500
    # characters (a quarter of the budget), dropping ten units at a time.
    record: list[Message] = []
    trimmer = Trimmer(record, 2_000)
    starts, longest = [], []
    for turn in range(200):
        record.append(Message("user", f"{turn:03d}" + "u" * 47))
        record.append(Message("assistant", "a" * 50))
        window = trimmer.window()
        starts.append(len(record) - len(window))
        longest.append(len(record) - len(trim_context(record, 2_000)))
        assert 1_500 <= sum(map(message_chars, window)) <= 2_000 or len(window) == len(record)
    assert len(set(longest)) > 180
    moves = len(set(starts)) - 1
    assert moves == (200 * 100 - 2_000) // 500
    assert all(b - a in (0, 10) for a, b in itertools.pairwise(starts))


@settings(max_examples=300, deadline=None)
@given(messages, st.integers(1, 60))
def test_result_fits_the_budget_and_starts_at_a_unit(history: list[Message], budget: int) -> None:
    try:
        result = trim_context(history, budget)
    except ValueError:
        return
    assert sum(map(message_chars, result)) <= budget
    if result and len(result) < len(history):
        assert result[0].role != "tool"
        assert history[-len(result) :] == result
