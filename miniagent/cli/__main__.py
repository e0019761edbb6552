"""``python -m miniagent.cli``: the command line."""

from .app import main

main()
