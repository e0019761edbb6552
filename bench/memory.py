"""Memory of hostile inputs to the built-in tools (issue 13 kind 3): peak RSS of each case.

Each case runs in a fresh child interpreter (so one case's peak does not hide another's) and
reports ``ru_maxrss`` of itself (the tool's process) and of its children (the ``grep`` worker):

- ``read_file`` with ``limit=5`` of a 2 GB sparse text file: only the shown lines are read;
- ``read_file`` of the same file whole: only its two ends are read;
- ``grep`` with a backtracking pattern over a 20 MB line: the worker's address space is capped
  (``search.WORKER_MEMORY_BYTES``), the file is skipped and the result says so.

Target: every peak under 200 MB.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from .common import ROOT, Report, Row

TARGET_MB = 200.0

_CHILD = r"""
import json, os, resource, sys
from miniagent.toolbox import default_tools
workspace, case = sys.argv[1], sys.argv[2]
tools = {t.name: t for t in default_tools(workspace)}
if case == "read_limit":
    result = tools["read_file"].execute({"path": "sparse.txt", "limit": 5}, None)
elif case == "read_whole":
    result = tools["read_file"].execute({"path": "sparse.txt"}, None)
else:
    result = tools["grep"].execute({"pattern": "(a|b)*c", "path": "long.txt", "timeout": 60}, None)
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"own": own, "children": children, "chars": len(result.content),
                  "tail": result.content[-120:]}))
"""

CASES = {
    "read_limit": "read_file(limit=5) of a 2 GB sparse text file",
    "read_whole": "read_file of a 2 GB sparse text file (whole: its two ends)",
    "grep": "grep (a|b)*c over one 20 MB line (worker capped)",
}


def _measure(workspace: Path, case: str) -> dict[str, float | str]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(workspace), case],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=True,
    )
    result: dict[str, float | str] = json.loads(done.stdout)
    return result


def run(report: Report, quick: bool) -> None:
    section = report.section("memory", "Memory of hostile inputs to the tools")
    section.notes.append(__doc__.split("\n\n", 1)[1].strip() if __doc__ else "")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as folder:
        workspace = Path(folder)
        with open(workspace / "sparse.txt", "wb") as handle:
            handle.write(b"".join(b"line %d\n" % n for n in range(1000)))
            handle.truncate(2 * 1024**3)  # the rest is a hole: no disk used
        (workspace / "long.txt").write_bytes(b"a" * 20_000_000 + b"\n")
        for case, label in CASES.items():
            figures = _measure(workspace, case)
            peak = max(float(figures["own"]), float(figures["children"]))
            section.rows.append(
                Row(
                    label,
                    f"peak RSS {peak:.0f} MB",
                    f"< {TARGET_MB:.0f} MB",
                    peak < TARGET_MB,
                    f"tool process {float(figures['own']):.0f} MB, "
                    f"children {float(figures['children']):.0f} MB; "
                    f"result ends {str(figures['tail'])[-60:]!r}",
                )
            )
