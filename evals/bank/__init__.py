"""The question bank: questions asked at an agent's decision points, and how one is chosen.

The bank (``bank/questions.yaml``) holds questions, each naming a hypothesis and a measurement
the agent can make, for four triggers: ``stall``, ``limit_claim``, ``suspicious_gain`` and
``failed_claim``. Depends on pydantic and PyYAML only (never on the harness or inspect-ai).
"""

from evals.bank.schema import (
    DEFAULT_BANK_PATH,
    TAGS,
    TRIGGERS,
    Bank,
    BankError,
    Question,
    Tag,
    Trigger,
    load_bank,
)
from evals.bank.select import CATEGORY_TAGS, choose_question, focus_from_scenarios

__all__ = [
    "CATEGORY_TAGS",
    "DEFAULT_BANK_PATH",
    "TAGS",
    "TRIGGERS",
    "Bank",
    "BankError",
    "Question",
    "Tag",
    "Trigger",
    "choose_question",
    "focus_from_scenarios",
    "load_bank",
]
