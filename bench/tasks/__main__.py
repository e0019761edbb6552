"""``python -m bench.tasks``: run the task suite on the embedded model, one line per task."""

import sys

from . import main

sys.exit(main())
