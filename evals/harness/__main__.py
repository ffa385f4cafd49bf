"""``python -m evals.harness``: see :mod:`evals.harness.cli`."""

import sys

from evals.harness.cli import main

sys.exit(main())
