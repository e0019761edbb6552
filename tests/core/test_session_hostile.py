"""Session files meet hostile or unlucky input (issue 13, kinds 2, 4, 5): special files are refused
without blocking, deep nesting is a ``SessionError`` naming the line (or a dropped torn tail), and a
file that is not a session is never changed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from miniagent import JSONLSession, Message, SessionError, ToolCall, append_session, load_session, run_agent
from miniagent._torn import is_cut_session_line
from miniagent.messages import json_utf8, message_to_json
from miniagent.testing import ScriptedClient
from tests.cli_helpers import FakeOpenAI, model_args, run_cli, text_turn
from tests.helpers import usual_umask

DEEP = 5_000
USER_LINE = b'{"role":"user","content":"hi"}\n'


def _open_every_way(path: Path, appends: bool = True) -> list[str]:
    """Try each way a session is opened; return the text of each ``SessionError``.

    ``appends=False`` leaves out the appends that read only the first and last lines.
    """
    problems: list[str] = []
    attempts = [
        lambda: load_session(path),
        lambda: JSONLSession(path).load(),
        lambda: run_agent(
            client=ScriptedClient([["x"]]), system="", tools=[], user="u", max_turns=1, session_path=path
        ),
    ]
    if appends:
        attempts.append(lambda: append_session(path, Message("user", "x")))
        attempts.append(lambda: JSONLSession(path).append(Message("user", "x")))
    for attempt in attempts:
        with pytest.raises(SessionError) as raised:
            attempt()
        problems.append(str(raised.value))
    return problems


def _in_thread_with_deadline(action: object, seconds: float = 10.0) -> None:
    """Run ``action`` in a thread; fail (not hang) when it does not finish in time."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            action()  # type: ignore[operator]
        except BaseException as error:  # handed to the test thread
            failure.append(error)

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "opening the session blocked"
    if failure:
        raise failure[0]


# --- kind 2: special files ------------------------------------------------------------------------


def test_a_fifo_is_refused_at_once_and_left_alone(tmp_path: Path) -> None:
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)

    def check() -> None:
        for problem in _open_every_way(fifo):
            assert str(fifo) in problem and "not a regular file" in problem

    _in_thread_with_deadline(check)
    assert fifo.is_fifo()


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused(device: str) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    _in_thread_with_deadline(lambda: [None for _ in _open_every_way(Path(device))])


def test_a_symlink_to_a_device_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "s.jsonl"
    link.symlink_to("/dev/zero")
    _in_thread_with_deadline(lambda: [None for _ in _open_every_way(link)])


def test_a_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "s.jsonl"
    folder.mkdir()
    for problem in _open_every_way(folder):
        assert "not a regular file" in problem


# --- kind 4: deep nesting -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        b"[" * DEEP + b"]" * DEEP,
        b'{"role":"user","content":"x","extra":' + b"[" * DEEP + b"]" * DEEP + b"}",
        b'{"role":"assistant","content":"","tool_calls":[{"id":"a","name":"b","input":'
        + b'{"k":' * DEEP
        + b"1"
        + b"}" * DEEP
        + b"}]}",
    ],
    ids=["array", "field", "tool-input"],
)
def test_a_deeply_nested_line_is_a_session_error_naming_it(tmp_path: Path, line: bytes) -> None:
    path = tmp_path / "s.jsonl"
    content = USER_LINE + line + b"\n" + USER_LINE
    path.write_bytes(content)
    for problem in _open_every_way(path, appends=False):
        assert f"{path}:2:" in problem
    assert path.read_bytes() == content


def test_a_deeply_nested_torn_tail_of_a_session_line_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    tail = b'{"role":"tool","content":"x","tool_call_id":"c","extra":' + b"[" * DEEP
    path.write_bytes(USER_LINE + tail)
    assert load_session(path) == [Message("user", "hi")]
    append_session(path, Message("assistant", "ok"))
    assert load_session(path) == [Message("user", "hi"), Message("assistant", "ok")]


def test_a_deeply_nested_tail_that_is_no_session_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    content = USER_LINE + b"[" * DEEP
    path.write_bytes(content)
    for problem in _open_every_way(path):
        assert f"{path}:2:" in problem
    assert path.read_bytes() == content


def test_a_message_too_deep_to_load_back_is_not_stored(tmp_path: Path) -> None:
    deep: dict[str, object] = {}
    for _ in range(DEEP):
        deep = {"k": deep}
    path = tmp_path / "s.jsonl"
    append_session(path, Message("user", "hi"))
    with pytest.raises(SessionError, match="message not stored"):
        append_session(path, Message("assistant", "", (ToolCall("c", "t", deep),)))
    assert path.read_bytes() == USER_LINE


# --- kind 5: a file that is not a session -----------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b'{ // my settings\n  "theme": "dark" }',  # two lines, the first is no JSON
        b"{ // my settings ... }",  # one line without a newline
        b'{"theme": "dark"}',  # JSON, one line, but no message
        b'{"role": "user", "content": "spaced',  # JSON with spaces: this module never writes it
        b"# notes\nmore notes\n",
        b'{"role":"user","content":"hi"}x\n',
        b"\x00\x01binary",
    ],
)
def test_a_file_that_is_not_a_session_is_refused_untouched(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    for problem in _open_every_way(path):
        assert str(path) in problem
    assert path.read_bytes() == content


@pytest.mark.parametrize("cut", [1, 2, 9, 15, 20, 31, 40])
def test_a_provably_cut_session_line_is_removed(tmp_path: Path, cut: int) -> None:
    """Every prefix of a line this module writes counts as torn (here: cut at several points)."""
    line = b'{"role":"assistant","content":"\xc3\xa9t\xc3\xa9 \\n done"}\n'
    path = tmp_path / "s.jsonl"
    path.write_bytes(USER_LINE + line[:cut])
    assert load_session(path) == [Message("user", "hi")]
    append_session(path, Message("user", "again"))
    assert path.read_bytes() == USER_LINE + b'{"role":"user","content":"again"}\n'


def test_a_cut_first_line_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role":"user","content":"the first line was cut by a cr')
    assert load_session(path) == []
    append_session(path, Message("user", "hi"))
    assert path.read_bytes() == USER_LINE


def test_a_tail_with_a_raw_control_character_is_not_a_cut_line(tmp_path: Path) -> None:
    """The writer escapes control characters, so such a tail was not written by it."""
    content = USER_LINE + b'{"role":"user","content":"a\tb'
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    for problem in _open_every_way(path):
        assert f"{path}:2:" in problem
    assert path.read_bytes() == content


def test_every_message_line_starts_like_a_session_record(tmp_path: Path) -> None:
    """The torn-tail rule relies on it: every line begins ``{"role":"R","content":"``."""
    path = tmp_path / "s.jsonl"
    messages = [
        Message("user", ""),
        Message("assistant", "", (ToolCall("c", "t", {"a": 1}, "bad"),)),
        Message("tool", "x\u2028", tool_call_id="c", is_error=True),
    ]
    for message in messages:
        append_session(path, message)
    for line, message in zip(path.read_bytes().splitlines(), messages, strict=True):
        assert line.startswith(b'{"role":"' + message.role.encode() + b'","content":"')


SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6)


def _containers(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)


@settings(max_examples=60, deadline=None)
@given(
    st.builds(
        Message,
        role=st.sampled_from(["user", "assistant"]),
        content=st.text(max_size=40),
    )
    | st.builds(
        Message,
        role=st.just("tool"),
        content=st.text(max_size=40),
        tool_call_id=st.text(max_size=5),
        is_error=st.booleans(),
    )
    | st.builds(
        lambda name, data: Message("assistant", "", (ToolCall("c", name, data),)),
        st.text(max_size=5),
        st.dictionaries(
            st.text(max_size=4),
            st.recursive(SCALARS, _containers, max_leaves=8),
            max_size=3,
        ),
    )
)
def test_every_prefix_of_a_written_line_is_a_cut_line_and_the_whole_line_is_not(message: Message) -> None:
    line = json_utf8(message_to_json(message))
    assert not is_cut_session_line(line)
    for cut in range(1, len(line)):
        assert is_cut_session_line(line[:cut]), line[:cut]
    assert not is_cut_session_line(line + b"x")
    assert not is_cut_session_line(line[:-1] + b" " + line[-1:])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", ["run", "chat"])
@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "settings"])
def test_the_cli_refuses_a_session_that_is_no_session(tmp_path: Path, command: str, special: str) -> None:
    """``--session`` naming a FIFO, a device or a settings file: one line on stderr, the file
    unchanged, the model never asked; exit 64 for a special file (the command line names
    something that cannot be a session: ``option_files``), 1 for a file whose content is not one."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    if special == "fifo":
        session = tmp_path / "s.jsonl"
        os.mkfifo(session)
    elif special == "settings":
        session = tmp_path / "settings.json"
        session.write_bytes(b"{ // my settings ... }")
    else:
        session = Path(special)
    with FakeOpenAI([text_turn("never")]) as server:
        args = [command, "--session", str(session), *model_args(server, workspace)]
        if command == "run":
            args.append("hello")
        result = run_cli(args, tmp_path, input="hello\n")
    assert result.returncode == (1 if special == "settings" else 64), result.stderr
    assert str(session) in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert server.posts == 0
    if special == "settings":
        assert session.read_bytes() == b"{ // my settings ... }"


# --- round 3: session pop counts lines as the loader does ------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        # a raw carriage return as JSON whitespace inside a committed answer (the red team's input)
        b'{"role":"user","content":"one"}\n{"role":"assistant",\r"content":"1"}\n'
        b'{"role":"user","content":"two"}\n{"role":"assistant","content":"2"}\n',
        # CRLF line ends, a line of a lone "\r", and a "\r" inside the popped user line
        b'{"role":"user","content":"one"}\r\n{"role":"assistant","content":"1"}\r\n\r\n'
        b'{"role":"user",\r"content":"two"}\r\n{"role":"assistant","content":"2"}',
    ],
    ids=["raw-cr-inside-a-line", "crlf-and-blank-cr-lines"],
)
def test_session_pop_cuts_at_the_line_the_loader_counts(tmp_path: Path, content: bytes) -> None:
    from miniagent.cli.session_command import pop_last_exchange

    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    assert [m.content for m in load_session(path)] == ["one", "1", "two", "2"]
    removed = pop_last_exchange(path)
    assert [m.content for m in removed] == ["two", "2"]
    assert [m.content for m in load_session(path)] == ["one", "1"]  # the file still loads
    assert content.startswith(path.read_bytes())  # only whole lines at the end were cut


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([b"", b" ", b"\r", b"\t"]), min_size=8, max_size=8))
def test_session_lines_and_the_loader_agree_on_every_whitespace(pads: list[bytes]) -> None:
    """Whitespace the loader accepts, put around a line's tokens: ``session_lines`` finds the
    same records, at the offsets where they start."""
    from miniagent.session import _parse, holds_record, session_lines

    lines = [
        pads[0] + b'{"role":"user",' + pads[1] + b'"content":"a"}' + pads[2],
        pads[3],
        pads[4] + b'{"role":"assistant","content":' + pads[5] + b'"b"}' + pads[6] + pads[7],
    ]
    data = b"\n".join(lines) + b"\n"
    messages = _parse("s.jsonl", data)[0]
    records = [(offset, line) for offset, line in session_lines(data) if holds_record(line)]
    assert len(records) == len(messages) == 2
    assert [data[offset:].split(b"\n", 1)[0] for offset, _ in records] == [lines[0], lines[2]]


# --- round 3: what a session holds is private -----------------------------------------------------


def test_a_new_session_file_and_its_new_folders_are_private(tmp_path: Path) -> None:
    path = tmp_path / "made" / "for it" / "s.jsonl"
    with usual_umask():
        append_session(path, Message("user", "hi"))
        assert path.stat().st_mode & 0o777 == 0o600
        for folder in (tmp_path / "made", tmp_path / "made" / "for it"):
            assert folder.stat().st_mode & 0o777 == 0o700, folder
        mine = tmp_path / "mine.jsonl"
        mine.write_bytes(USER_LINE)
        mine.chmod(0o640)  # an existing file keeps the mode its owner gave it
        append_session(mine, Message("user", "again"))
        assert mine.stat().st_mode & 0o777 == 0o640


def test_chat_sessions_folder_is_private_and_never_another_users(tmp_path: Path) -> None:
    from miniagent._folders import ForeignFolderError
    from miniagent.cli.defaults import default_session_path, session_folder

    environ = {"XDG_STATE_HOME": str(tmp_path / "state")}
    with usual_umask():
        path = default_session_path(environ)
    assert path.stat().st_mode & 0o777 == 0o600
    for folder in (tmp_path / "state", tmp_path / "state" / "miniagent", session_folder(environ)):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    if os.geteuid() != 0:
        pytest.skip("handing a folder to another user needs root")
    os.chown(session_folder(environ), 65534, 65534)  # nobody's
    with pytest.raises(ForeignFolderError, match="owned by another user"):
        default_session_path(environ)
    assert [p.name for p in session_folder(environ).iterdir()] == [path.name]
