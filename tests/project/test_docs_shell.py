"""The shell examples of the docs run as written, so a command the docs show cannot rot.

Every ```bash block of ``docs/src/**/*.md`` and ``README.md`` runs, page by page (the blocks of
one page in order, in one folder: a later block goes on from an earlier one's session), with
``bash``, offline:

- the folder holds a copy of ``examples/`` (and is also ``~/projects/website``, the tutorial's
  project); ``HOME``, ``XDG_*`` point into the test's own folder;
- ``miniagent`` on ``PATH`` is this checkout's CLI (``python -m miniagent``), and every model
  request goes to a model server on 127.0.0.1 (``MINIAGENT_BASE_URL``; a ``--base-url`` the docs
  give is pointed there too, keeping its path; ``miniagent run`` gets ``--prices 3,15`` unless it
  gives its own: the price the docs' priced API would have, for ``--max-cost``). The server
  speaks each provider's wire format (OpenAI chat and Responses, Anthropic, Gemini, Bedrock's
  event stream) with a fixture's text answer; asked to "update the changelog", it calls
  ``write_file`` twice (``call_1``, ``call_2``), as the docs' approval-that-waits flow assumes;
- ``python`` is this interpreter; ``pip install NAME`` checks that NAME is installed (the test
  extra installs what the docs install) instead of installing;
- a block of another language whose fence names a path (```` ```toml
  title="~/.config/miniagent/config.toml" ````) is written there (``~`` is the test's home, a
  relative path is in the project folder) when the page reaches it;
- crontab lines run their command (the five schedule fields dropped; ``NAME=value`` lines of a
  block holding crontab lines are exported, as cron does); a block whose fence names a
  file (```` ```bash title="nightly-todos.sh" ````) is also written to ``~/bin/<name>``,
  executable, for the crontab line that runs it.

Each ``miniagent`` invocation must exit 0, or with a code the block itself names (``# exit 4``,
``[ $? -eq 4 ]``). Not run, and said so in the skip: the embedded model's commands
(``--provider local``: the main job's own tests and the fresh-clone check run it), a block that
creates a virtual environment (the README's two commands: CI runs the second) and a Celery worker
(the Celery page's Python examples start real workers).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from miniagent.process.environment import is_secret_name
from tests.eventstream_frames import encoded
from tests.providers_server import Captured, ProviderServer, Reply, fixture

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs" / "src").rglob("*.md")), ROOT / "README.md"]
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
TITLE = re.compile(r'title="([A-Za-z0-9_.~/-]+)"')
CRONTAB = re.compile(r"^(?:[\d*/,-]+\s+){5}(?P<command>\S.*)$")
NAMED_CODE = re.compile(r"(?:#\s*exit|-eq)\s+(\d+)")
NOT_RUN = {
    "python3 -m venv": "creates a virtual environment (the README's two commands: CI runs the second)",
    "celery -A": "starts a Celery worker (the Celery page's Python examples start real workers)",
}


@dataclass(frozen=True)
class ShellBlock:
    """One fenced block: its language, its code and the file name its fence gives (or None)."""

    language: str
    code: str
    title: str | None


def _blocks(page: Path) -> list[ShellBlock]:
    """The ```bash blocks of ``page``, and the blocks of other languages whose fence names a path
    (```` ```toml title="~/.config/miniagent/config.toml" ````), in the page's order."""
    found = []
    for language, info, code in FENCE.findall(page.read_text(encoding="utf-8")):
        title = TITLE.search(info)
        name = title.group(1) if title else None
        if language == "bash" or (name and "/" in name):
            found.append(ShellBlock(language, code, name))
    return found


def _pages() -> list[object]:
    return [pytest.param(page, id=str(page.relative_to(ROOT))) for page in PAGES if _blocks(page)]


# --- the model server ------------------------------------------------------------------------------


def _openai_calls() -> bytes:
    """An OpenAI chat stream calling write_file twice (call_1, call_2)."""
    calls = [
        {
            "index": 0,
            "id": "call_1",
            "type": "function",
            "function": {
                "name": "write_file",
                "arguments": json.dumps(
                    {"path": "CHANGELOG.md", "content": "# Changelog\n\n- Nightly notes.\n"}
                ),
            },
        },
        {
            "index": 1,
            "id": "call_2",
            "type": "function",
            "function": {
                "name": "write_file",
                "arguments": json.dumps({"path": "RELEASE.txt", "content": "released\n"}),
            },
        },
    ]
    chunks = [
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "tool_calls": calls}, "finish_reason": None}
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    return ("".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n").encode()


def _asks_for_the_changelog(body: dict[str, object]) -> bool:
    """A chat request whose last message is the user's prompt about the changelog."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return False
    last = messages[-1]
    return (
        isinstance(last, dict)
        and last.get("role") == "user"
        and "changelog" in str(last.get("content")).lower()
    )


def _instance(schema: dict[str, object]) -> object:
    """A small value valid against the simple JSON Schemas the docs give (objects of strings,
    integers, numbers, booleans, arrays)."""
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties")
        assert isinstance(properties, dict)
        return {name: _instance(value) for name, value in properties.items()}
    samples: dict[object, object] = {"string": "notes.txt", "integer": 1, "number": 1.5, "boolean": True}
    if kind == "array":
        return []
    return samples[kind]


def _openai_text(text: str) -> bytes:
    """An OpenAI chat stream answering ``text``."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return ("".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n").encode()


def _answer(captured: Captured) -> Reply:
    """Each provider's fixture answer, by the request's path; on chat, the changelog calls and an
    answer valid against the request's output schema."""
    path = captured.path.split("?", 1)[0]
    if path.endswith("/chat/completions"):
        if _asks_for_the_changelog(captured.body):
            return Reply([_openai_calls()])
        wanted = captured.body.get("response_format")
        if isinstance(wanted, dict) and wanted.get("type") == "json_schema":
            return Reply([_openai_text(json.dumps(_instance(wanted["json_schema"]["schema"])))])
        return Reply([fixture("openai-text.sse")])
    if path.endswith("/responses"):
        return Reply([fixture("responses-text.sse")])
    if path.endswith("/messages"):
        return Reply([fixture("anthropic-text.sse")])
    if path.endswith(":streamGenerateContent"):
        return Reply([fixture("gemini-text.sse")])
    if path.endswith("/converse-stream"):
        return Reply([encoded("bedrock-text.json")], content_type="application/vnd.amazon.eventstream")
    return Reply([b'{"error": "no such path"}'], status=404, content_type="application/json")


@pytest.fixture(scope="module")
def model_server() -> Iterator[ProviderServer]:
    """One model server on 127.0.0.1 for every page."""
    with ProviderServer(handler=_answer) as server:
        yield server


# --- running a page --------------------------------------------------------------------------------

_MINIAGENT = """#!/bin/sh
case " $* " in
  *" --provider local "*) echo "skipped (the embedded model): miniagent $*" >> "$DOCS_LOG"; exit 0 ;;
esac
if [ "$1" = run ]; then  # the server stands in for a priced API (run as the docs show, it is one)
  case " $* " in *" --prices "*) ;; *) set -- "$@" --prices 3,15 ;; esac
fi
"$DOCS_PYTHON" -m miniagent "$@"
code=$?
echo "$code miniagent $*" >> "$DOCS_LOG"
exit $code
"""

_PIP = """#!/bin/sh
# The docs' "pip install NAME": NAME must already be installed (the test extra installs it).
shift
for name in "$@"; do
  case "$name" in
    -*|.*|/*) ;;
    *) "$DOCS_PYTHON" -c "import importlib.metadata, sys; importlib.metadata.distribution(sys.argv[1])" \
         "${name%%[<>=\\[]*}" || { echo "pip: $name is not installed" >&2; exit 1; } ;;
  esac
done
"""


def _tools(folder: Path) -> Path:
    """``bin/`` with the ``miniagent``, ``python`` and ``pip`` the pages' commands meet."""
    bin_folder = folder / "bin"
    bin_folder.mkdir()
    python = '#!/bin/sh\nexec "$DOCS_PYTHON" "$@"\n'  # a wrapper: a symlink would lose the venv
    for name, text in {"miniagent": _MINIAGENT, "pip": _PIP, "python": python, "python3": python}.items():
        (bin_folder / name).write_text(text)
        (bin_folder / name).chmod(0o755)
    return bin_folder


def _script(block: ShellBlock, server_url: str) -> str:
    """The block as ``bash`` runs it: crontab lines as their commands, ``--base-url`` at the server."""
    lines = []
    crontab = any(CRONTAB.match(line) for line in block.code.splitlines())
    for line in block.code.splitlines():
        cron = CRONTAB.match(line)
        if cron:
            line = cron.group("command")
        elif crontab and re.match(r"[A-Z_][A-Z0-9_]*=", line):
            line = "export " + line
        line = re.sub(
            r"--base-url\s+(\S+)",
            lambda found: "--base-url " + shlex.quote(server_url + _path_of(found.group(1))),
            line,
        )
        lines.append(line)
    return "\n".join(lines) + "\n"


def _path_of(url: str) -> str:
    """The path of ``url`` (``/v1`` of ``http://127.0.0.1:11434/v1``)."""
    found = re.match(r"https?://[^/\s]+(/\S*)?", url)
    return found.group(1) or "" if found else ""


@pytest.mark.parametrize("page", _pages())
def test_the_shell_examples_run_as_written(page: Path, tmp_path: Path, model_server: ProviderServer) -> None:
    blocks = _blocks(page)
    skipped = [why for block in blocks for text, why in NOT_RUN.items() if text in block.code]
    runnable = [block for block in blocks if not any(text in block.code for text in NOT_RUN)]
    if not any(block.language == "bash" for block in runnable):
        pytest.skip("; ".join(skipped))
    home = tmp_path / "home"
    work = home / "projects" / "website"
    shutil.copytree(ROOT / "examples", work)
    shutil.copytree(ROOT / "examples", work / "examples")
    (home / "bin").mkdir()
    log = tmp_path / "invocations.log"
    env = {name: value for name, value in os.environ.items() if not is_secret_name(name)}
    env = {name: value for name, value in env.items() if not name.startswith("MINIAGENT_")}
    env.update(
        HOME=str(home),
        XDG_STATE_HOME=str(home / ".local" / "state"),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_CACHE_HOME=os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
        PATH=f"{_tools(tmp_path)}{os.pathsep}{home / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        MINIAGENT_BASE_URL=model_server.url,
        DOCS_PYTHON=sys.executable,
        DOCS_LOG=str(log),
    )
    for block in runnable:
        if block.language != "bash":
            assert block.title is not None
            target = (
                Path(block.title.replace("~", str(home), 1))
                if block.title.startswith("~")
                else work / block.title
            )
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code)
            continue
        if block.title:
            script = home / "bin" / block.title
            script.write_text(_script(block, model_server.url))
            script.chmod(0o755)
        done = subprocess.run(
            ["bash", "-c", _script(block, model_server.url)],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        allowed = {0, *(int(code) for code in NAMED_CODE.findall(block.code))}
        ran = log.read_text().splitlines() if log.exists() else []
        log.unlink(missing_ok=True)
        if re.search(r"(^|[\s;&|(])miniagent ", block.code):
            assert ran, f"no miniagent command ran: {block.code}\nstderr: {done.stderr[-2000:]}"
        wrong = [
            line for line in ran if not line.startswith("skipped") and int(line.split()[0]) not in allowed
        ]
        assert not wrong, f"{block.code}\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
        assert done.returncode in allowed, f"{block.code}\nstderr: {done.stderr[-2000:]}"
