"""A study in one command: arms x models x epochs as one resumable Inspect eval set.

See :mod:`evals.study.__main__` for the command line (``python -m evals.study``).
"""

from evals.study.plan import StudyPlan, StudyPlanError
from evals.study.run import StudyResult, run_study, study_tasks

__all__ = ["StudyPlan", "StudyPlanError", "StudyResult", "run_study", "study_tasks"]
