"""The README's Python examples run as tests, so the README cannot drift from the code.

Each ```python block runs in a fresh interpreter, in a temporary folder holding a copy of
``examples/``. A block that uses the embedded model (``create_client("local")``) is marked
``local_model``. (The package's layout lives in the docs site, drawn by ``docs/hooks.py`` when
the site is built; the README's other promises are checked by ``tests/project/test_docs.py``.)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def _params() -> list[object]:
    params: list[object] = []
    for index, code in enumerate(BLOCKS):
        marks = [pytest.mark.local_model] if 'create_client("local")' in code else []
        params.append(pytest.param(code, id=f"block{index + 1}", marks=marks))
    return params


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 1


@pytest.mark.parametrize("code", _params())
def test_readme_example_runs(code: str, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
