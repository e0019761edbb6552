"""The documentation site's Python examples run as tests, so the docs cannot drift from the code.

Every ```python block of ``docs/src/**/*.md`` runs in a fresh interpreter, in a temporary folder
holding a copy of ``examples/``, offline (the README's own blocks run in ``test_readme.py``):

- ``OPENAI_BASE_URL`` names a model server on 127.0.0.1 that speaks OpenAI's chat completions
  (``tests.providers_server``) and answers every request with one short text answer, so an
  example written for a local Ollama server runs against it;
- a block that reads ``REDIS_URL`` (or imports a page file that does) gets a real
  ``redis-server`` of this test session, and is skipped, loudly, where none is installed;
- a block whose fence names a file (```` ```python title="tasks.py" ````) is also written to that
  file in the folder of every block of its page, so the next block can import it;
- a block that uses the embedded model (``create_client("local")``) is marked ``local_model``;
  one that imports the OpenTelemetry SDK is skipped where the ``otel`` extra is not installed;
  a block that appears twice (a README example repeated in the tutorial) runs once.

The environment's keys (``*_API_KEY`` and the like) are left out. Beside the examples: they are
lint-clean (pyflakes, the project's line length); every ``--option`` the docs give ``miniagent``
is one of its options (the README's too); every generated part of a page is known to the hook
(``docs/hooks.py``) and lists every option; the layout drawing lists every module; the README
leads with its two commands and its map points at every tutorial and how-to page; the Griffe
extension (``docs/griffe_rst.py``) rewrites what it should. The site itself is built by
``.ci/run`` (``mkdocs build --strict``: pages, nav, links, anchors, cross-references).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from miniagent.process.environment import is_secret_name
from tests.providers_server import Captured, ProviderServer, Reply

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted((DOCS / "src").rglob("*.md"))
README = ROOT / "README.md"
GUIDES = ("tutorial", "how-to")
FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
TITLE = re.compile(r'title="([A-Za-z_][A-Za-z0-9_]*\.py)"')
ANSWER = "An answer from the model server on 127.0.0.1."


@dataclass(frozen=True)
class Block:
    """One ```python block: its page, its code, and the file name its fence gives (or None)."""

    page: Path
    code: str
    title: str | None


def _blocks(page: Path) -> list[Block]:
    found = []
    for info, code in FENCE.findall(page.read_text(encoding="utf-8")):
        title = TITLE.search(info)
        found.append(Block(page, code, title.group(1) if title else None))
    return found


BLOCKS = [block for page in PAGES for block in _blocks(page)]


def _page_files(block: Block) -> list[Block]:
    return [other for other in BLOCKS if other.page == block.page and other.title is not None]


def _needs_redis(block: Block) -> bool:
    imported = [
        other
        for other in _page_files(block)
        if re.search(rf"^\s*(from|import)\s+{re.escape(other.title[:-3])}\b", block.code, re.M)  # type: ignore[index]
    ]
    return "REDIS_URL" in block.code or any("REDIS_URL" in other.code for other in imported)


def _params() -> list[Any]:
    params: list[Any] = []
    seen: set[str] = set()
    for block in BLOCKS:
        if block.code in seen:
            continue
        seen.add(block.code)
        number = sum(1 for other in params if other.values[0].page == block.page) + 1
        name = block.page.relative_to(DOCS).with_suffix("").as_posix().removeprefix("src/")
        marks = [pytest.mark.local_model] if 'create_client("local")' in block.code else []
        params.append(pytest.param(block, id=f"{name}-{number}", marks=marks))
    return params


def _sse_answer(captured: Captured) -> Reply:
    """The reply of the docs' model server: one text answer, its end, and its usage."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ANSWER}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29}},
    ]
    body = "".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n"
    return Reply([body.encode()])


@pytest.fixture(scope="module")
def model_server() -> Iterator[ProviderServer]:
    """An OpenAI-compatible model server on 127.0.0.1 for the examples that name a server."""
    with ProviderServer(handler=_sse_answer) as server:
        yield server


def test_docs_have_examples() -> None:
    assert len(PAGES) >= 20
    assert len(BLOCKS) >= 20


@pytest.mark.parametrize("block", _params())
def test_docs_example_runs(
    block: Block, tmp_path: Path, model_server: ProviderServer, request: pytest.FixtureRequest
) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    for other in _page_files(block):
        (tmp_path / str(other.title)).write_text(other.code, encoding="utf-8")
    env = {name: value for name, value in os.environ.items() if not is_secret_name(name)}
    env["OPENAI_BASE_URL"] = f"{model_server.url}/v1"
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")])
    if _needs_redis(block):
        env["REDIS_URL"] = str(request.getfixturevalue("redis_url")).rsplit("/", 1)[0]
    if re.search(r"^\s*from opentelemetry\.sdk\b", block.code, re.M):
        pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")
    done = subprocess.run(
        [sys.executable, "-c", block.code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_docs_examples_are_lint_clean(tmp_path: Path) -> None:
    """Pyflakes' findings (unused imports, undefined names) and the line length of the project."""
    pytest.importorskip("ruff", reason="ruff is not installed")
    for number, block in enumerate(BLOCKS):
        name = f"{block.page.stem.replace('-', '_')}_{number}.py"
        (tmp_path / name).write_text(block.code, encoding="utf-8")
    config = ["--config", str(ROOT / "pyproject.toml"), "--select", "F,E501", "--no-cache"]
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", *config, "--output-format", "concise", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cli_options() -> dict[str, set[str]]:
    """Every option of every ``miniagent`` command, by command path (``miniagent run``, ...)."""
    import typer
    import typer.main

    from miniagent.cli.app import app

    options: dict[str, set[str]] = {}

    def walk(command: Any, path: str) -> None:
        context = typer.Context(command, **command.context_settings)
        names: set[str] = set()
        for param in [*command.params, command.get_help_option(context)]:
            if getattr(param, "param_type_name", "") == "option":
                names.update(param.opts + param.secondary_opts)
        options[path] = names
        if hasattr(command, "list_commands"):
            for name in command.list_commands(context):
                walk(command.get_command(context, name), f"{path} {name}")

    walk(typer.main.get_command(app), "miniagent")
    return options


def test_generated_parts_are_known_and_list_every_option() -> None:
    hooks = _hooks()
    for page in PAGES:
        hooks.expand(page.read_text(encoding="utf-8"), str(page))  # an unknown part raises
    reference = hooks.expand("<!-- generated: cli -->")
    for path, names in _cli_options().items():
        if path not in ("miniagent session", "miniagent config"):  # groups: "miniagent session pop"
            assert f"`{path}`" in reference or path == "miniagent"
        for name in names:
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", reference), (path, name)
    codes = hooks.expand("<!-- generated: exit-codes -->")
    from miniagent.cli.defaults import EXIT_CODES

    for code in EXIT_CODES:
        assert f"<code>{code}</code>" in codes


def _named_options(text: str) -> Iterator[tuple[str, str]]:
    """(option, context) for each ``--option`` the text gives ``miniagent``: in inline code that
    starts with it, and on command lines (in code blocks) whose program is ``miniagent``."""
    for span in re.findall(r"`(--[a-z][a-z0-9-]*)", text):
        yield span, "inline code"
    for block in re.findall(r"^```(?:bash|sh|text)?\n(.*?)^```", text, re.M | re.S):
        for line in block.splitlines():
            for part in re.split(r"&&|\|\||;|\||\$\(", line):
                words = part.split()
                if words and words[0].rsplit("/", 1)[-1] == "miniagent":
                    for word in words[1:]:
                        if re.fullmatch(r"--[a-z][a-z0-9-]*(=.*)?", word):
                            yield word.split("=", 1)[0], line.strip()


def test_every_option_the_docs_name_exists() -> None:
    known = set().union(*_cli_options().values())
    wrong = [
        (page.name, option, where)
        for page in [*PAGES, README]
        for option, where in _named_options(page.read_text(encoding="utf-8"))
        if option not in known
    ]
    assert not wrong


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S)


def test_readme_leads_with_the_two_commands() -> None:
    """The README's first section is "Two commands": install and run the embedded model on a
    file of ``examples/``, and the test command CI runs; the first agent tutorial gives the first
    one as it is."""
    readme = README.read_text(encoding="utf-8")
    first = readme.split("\n## ", 1)[1]
    assert first.startswith("Two commands\n")
    commands = _bash_blocks(first.split("\n## ", 1)[0])
    assert len(commands) == 2
    run, tests = commands
    assert "pip install -e '.[cli,local]'" in run and "miniagent run --provider local" in run
    assert "--workspace examples" in run
    assert "pip install -e '.[test]'" in tests and tests.rstrip().endswith("-m pytest")
    assert run in _bash_blocks((DOCS / "src" / "tutorial" / "first-agent.md").read_text(encoding="utf-8"))


def test_readme_map_points_at_every_guide() -> None:
    """Where to find what: every link of the README into ``docs/`` names a page that exists, and
    every tutorial and how-to page is linked."""
    readme = README.read_text(encoding="utf-8")
    assert "## Where to find what" in readme
    linked = set(re.findall(r"\]\((docs/[^)#\s]+)", readme))
    assert linked and all((ROOT / link).is_file() for link in linked), linked
    guides = {page.relative_to(ROOT).as_posix() for page in PAGES if page.parent.name in GUIDES}
    assert guides <= linked, guides - linked


def test_layout_lists_every_module() -> None:
    """The layout page's drawing has one line per module of the package, every folder in a group."""
    drawing = _hooks().layout()
    for path in sorted((ROOT / "miniagent").rglob("*.py")):
        name = path.relative_to(ROOT / "miniagent").as_posix()
        assert re.search(rf"^  {re.escape(name)} ", drawing, re.M), name
    page = DOCS / "src" / "explanation" / "layout.md"
    assert "<!-- generated: layout -->" in page.read_text(encoding="utf-8")


def _griffe_rst() -> ModuleType:
    pytest.importorskip("griffe", reason="the docs extra is not installed")
    spec = importlib.util.spec_from_file_location("docs_griffe_rst", DOCS / "griffe_rst.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_literal_blocks_become_fenced_code() -> None:
    rst = _griffe_rst()
    text = "Usage::\n\n    run(x)\n    y = 1\n\nAfter.\n\nThe tree ::\n\n    a\n    └── b\n"
    assert rst.literal_blocks(text) == (
        "Usage:\n\n```python\nrun(x)\ny = 1\n```\n\nAfter.\n\nThe tree\n\n```text\na\n└── b\n```\n"
    )
    assert rst.literal_blocks('A file::\n\n    {"a": 1}\n') == 'A file:\n\n```json\n{"a": 1}\n```\n'
    assert rst.literal_blocks("Not a block:: here\n\n    x\n") == "Not a block:: here\n\n    x"


def test_simple_tables_become_markdown_tables() -> None:
    rst = _griffe_rst()
    text = "Before.\n\n====  ===\nname  a|b\n====  ===\n``x``  yes\nz     no\n====  ===\n\nAfter."
    assert rst.simple_tables(text) == (
        "Before.\n\n\n| name | a\\|b |\n| --- | --- |\n| ``x`` | yes |\n| z | no |\n\n\nAfter."
    )
