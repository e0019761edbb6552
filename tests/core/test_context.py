"""trim_context and message_chars, exactly as DESIGN.md says; the incremental Trimmer agrees."""

from __future__ import annotations

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
def test_trimmer_is_identical_to_trim_context_at_every_step(history: list[Message], budget: int) -> None:
    record: list[Message] = []
    trimmer = Trimmer(record, budget)
    for message in history:
        record.append(message)
        try:
            expected: object = trim_context(record, budget)
        except ValueError:
            expected = ValueError
        try:
            got: object = list(trimmer.window())
        except ValueError:
            got = ValueError
        assert got == expected


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
