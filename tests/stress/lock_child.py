"""Child process of the concurrent-writer tests (``test_stress_concurrent.py``).

Usage: ``python lock_child.py SESSION ROLE NAME [TURNS]``

- ``holder``: ``run_agent`` whose first tool call (``hold``) prints ``holding`` (flushed) and then
  waits for a line on stdin: the parent knows the run holds the session lock while it waits.
- ``writer``: ``run_agent`` with TURNS quick turns of tool calls (no waiting).
- ``append``: one ``append_session`` of a user message.

Every role prints a last JSON line: ``{"stop": reason}``, or ``{"error": type, "message": text}``
(exit status 3) when the call raised.
"""

from __future__ import annotations

import json
import sys

from miniagent import Message, SessionError, ToolCall, append_session, run_agent, tool
from miniagent.testing import ScriptedClient, Turn


@tool
def hold() -> str:
    """Signal the parent, then wait for its go."""
    print("holding", flush=True)
    sys.stdin.readline()
    return "released"


@tool
def mark(text: str) -> str:
    """Return the text.

    Args:
        text: the text.
    """
    return text


def main() -> int:
    session, role, name = sys.argv[1], sys.argv[2], sys.argv[3]
    turns_count = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    try:
        if role == "append":
            append_session(session, Message("user", f"{name}: appended"))
            print(json.dumps({"stop": "appended"}), flush=True)
            return 0
        turns: list[Turn]
        if role == "holder":
            turns = [[f"{name} holds", ToolCall(f"{name}_hold", "hold", {})], [f"{name} done"]]
        else:
            turns = [
                [
                    f"{name} turn {i} " + "x" * 3000,
                    ToolCall(f"{name}_{i}", "mark", {"text": f"{name} " * 500}),
                ]
                for i in range(turns_count)
            ]
            turns.append([f"{name} done"])
        result = run_agent(
            client=ScriptedClient(turns, record_messages=False),
            system="s",
            tools=[hold, mark],
            user=f"{name} starts",
            max_turns=len(turns),
            session_path=session,
        )
    except SessionError as error:
        print(json.dumps({"error": "SessionError", "message": str(error)}), flush=True)
        return 3
    print(json.dumps({"stop": result.stop_reason}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
