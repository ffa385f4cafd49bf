"""``python -m evals.harness``: see :mod:`evals.harness.pipeline.cli`."""

import sys

from evals.harness.pipeline.cli import main

sys.exit(main())
