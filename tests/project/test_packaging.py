"""The core imports only the standard library; the public names of DESIGN.md are importable."""

from __future__ import annotations

import subprocess
import sys

import miniagent

PUBLIC = [
    "ToolCall",
    "Message",
    "TextEvent",
    "ToolCallEvent",
    "DoneEvent",
    "ModelEvent",
    "ToolSpec",
    "ModelRequest",
    "ModelClient",
    "ToolResult",
    "Tool",
    "tool",
    "Approval",
    "BeforeToolCall",
    "RunResult",
    "run_agent",
    "trim_context",
    "message_chars",
    "load_session",
    "append_session",
    "exit_code_for_stop_reason",
    "MiniagentError",
    "EmptyResponseError",
    "SessionError",
    "ProviderError",
    "Reasoning",
    "ReasoningEvent",
    "Usage",
    "UsageEvent",
    "Compaction",
]


def test_public_names() -> None:
    for name in PUBLIC:
        assert hasattr(miniagent, name), name
    for name in ("EmptyResponseError", "SessionError", "ProviderError"):
        assert issubclass(getattr(miniagent, name), miniagent.MiniagentError)


def test_import_pulls_in_no_third_party_module() -> None:
    code = (
        "import sys, miniagent, miniagent.testing, miniagent.agent;"
        "print(sorted(m for m in ('requests', 'typer', 'click', 'rich', 'urllib3', 'xllamacpp',"
        " 'opentelemetry') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
