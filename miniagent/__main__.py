"""``python -m miniagent``: the command line."""

from ._launcher import main

main()
