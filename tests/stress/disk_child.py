"""Child process of the failing-disk tests (``test_stress_disk.py``).

Usage: ``python disk_child.py SESSION LIMIT SEED PREFIX``

With ``LIMIT > 0`` it sets ``RLIMIT_FSIZE`` to LIMIT bytes and ignores ``SIGXFSZ``, so a write that
crosses the limit writes what fits and the next one fails with ``EFBIG`` (no signal). Then it runs
``run_agent`` with the session and a scripted model whose turns carry tool calls with arguments
and results of 1-40 KB (``echo`` returns its text). It prints one JSON line per committed message
(``{"commit": digest}``, flushed inside ``on_message``) and a last line: ``{"stop": reason}``, or
``{"error": type, "errno": n, "message": text}`` with exit status 3 when ``run_agent`` raised.
"""

from __future__ import annotations

import json
import random
import resource
import signal
import sys

from stress_support import digest

from miniagent import Message, ToolCall, run_agent, tool
from miniagent.testing import ScriptedClient, Turn


@tool
def echo(text: str) -> str:
    """Return the text.

    Args:
        text: the text to return.
    """
    return text


def main() -> int:
    session, limit, seed, prefix = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    if limit > 0:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    rng = random.Random(seed)
    turns: list[Turn] = []
    for turn in range(30):
        calls: list[str | ToolCall] = [f"turn {turn}"]
        for k in range(rng.randint(1, 3)):
            text = chr(97 + rng.randrange(26)) * rng.randint(1_000, 40_000)
            calls.append(ToolCall(f"{prefix}_{turn}_{k}", "echo", {"text": text}))
        turns.append(calls)
    turns.append(["done"])

    def on_message(message: Message) -> None:
        print(json.dumps({"commit": digest(message)}), flush=True)

    try:
        result = run_agent(
            client=ScriptedClient(turns, record_messages=False),
            system="s",
            tools=[echo],
            user=f"run {prefix}",
            max_turns=len(turns),
            session_path=session,
            on_message=on_message,
        )
    except Exception as error:
        print(
            json.dumps(
                {"error": type(error).__name__, "errno": getattr(error, "errno", None), "message": str(error)}
            ),
            flush=True,
        )
        return 3
    print(json.dumps({"stop": result.stop_reason}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
