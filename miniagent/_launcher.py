"""Entry point of the ``miniagent`` command that needs nothing beyond the standard library.

The console script and ``bin/miniagent`` start here, so that an install without the ``cli`` extra
gets one clear line saying what to install instead of a traceback about ``typer``.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> None:
    """Run ``miniagent.cli.main``; exit 1 with an install hint when typer is missing.

    Raises:
        SystemExit: always, with the CLI's exit code.
    """
    try:
        from .cli import main as cli_main
    except ModuleNotFoundError as error:
        if error.name not in ("typer", "click"):
            raise
        sys.stderr.write(
            f"miniagent: error: the command line needs typer, which {sys.executable} lacks: "
            "pip install 'miniagent[cli]'\n"
        )
        raise SystemExit(1) from None
    cli_main()
