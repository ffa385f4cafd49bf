"""The question bank's schema: typed, validated questions and the YAML loader.

A bank file is YAML: a mapping with one key, ``questions``, holding a list of questions. Each
question has exactly the keys ``id``, ``triggers``, ``text``, ``hypothesis``, ``measurement``,
``tags`` and ``origin`` (see ``bank/README.md``).
"""

from __future__ import annotations

import importlib
import re
from collections import Counter
from collections.abc import Sequence
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from evals.data import resource

# PyYAML ships no type information; importing it this way keeps mypy's strict mode quiet
# without needing types-PyYAML.
yaml: Any = importlib.import_module("yaml")

Trigger = Literal["stall", "limit_claim", "suspicious_gain", "failed_claim"]
"""Decision points at which the questioner asks: progress stalls, the agent claims a hardware
limit, a suspiciously large gain, a completion claim that fails verification."""

Tag = Literal[
    "general",
    "prefill",
    "decode",
    "fp8",
    "varlen",
    "gqa",
    "host-side",
    "memory",
    "compute",
    "cpu",
    "correctness",
    "measurement",
]
"""What a question is about; selection prefers questions whose tags match the run's focus."""

TRIGGERS: tuple[str, ...] = get_args(Trigger)
TAGS: tuple[str, ...] = get_args(Tag)

DEFAULT_BANK_PATH: Traversable = resource("bank", "questions.yaml")
"""The bank shipped with the package (``bank/questions.yaml`` of the repository)."""

_SLUG = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_CODE_MARKERS = ("`", "{", "}", "__global__", "__device__", "#include", "#pragma", "<<<", "::")
_CALL = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\(")
_FIX_PHRASES = ("you should", "the fix is", "the answer is", "just use", "simply use")


def _one_line(value: str, name: str) -> str:
    """Strip a text field and require it to be one non-empty line.

    Args:
        value: The field's value.
        name: The field's name, for the error message.

    Returns:
        The stripped value.

    Raises:
        ValueError: The value is empty or spans several lines.

    """
    value = value.strip()
    if not value:
        raise ValueError(f"{name} is empty")
    if "\n" in value:
        raise ValueError(f"{name} must be one line")
    return value


def _code_in(text: str) -> str | None:
    """Return the first code-like fragment of ``text``, or None when it reads as prose.

    Args:
        text: The text to inspect.

    Returns:
        The offending marker, or None.

    """
    for marker in _CODE_MARKERS:
        if marker in text:
            return marker
    for line in text.splitlines():
        if line.rstrip().endswith(";"):
            return "a line ending in ';'"
    call = _CALL.search(text)
    if call is not None:
        return call.group(0)
    return None


class Question(BaseModel):
    """One question of the bank.

    Attributes:
        id: Stable slug (lowercase letters and digits joined by single hyphens); never reuse
            or rename one, since run logs refer to questions by id.
        triggers: The decision points at which the question may be asked.
        text: The question as put to the agent: one line of prose ending in '?', no code, and
            not stating the fix.
        hypothesis: The hypothesis the question names, one sentence.
        measurement: What the agent can measure to test the hypothesis, and how, one sentence.
        tags: What the question is about (see :data:`Tag`).
        origin: Where the question comes from (e.g. ``"human, run <log id>"``).

    """

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True)

    id: str
    triggers: tuple[Trigger, ...]
    text: str
    hypothesis: str
    measurement: str
    tags: tuple[Tag, ...]
    origin: str

    @field_validator("id")
    @classmethod
    def _id_is_slug(cls, value: str) -> str:
        if not _SLUG.fullmatch(value):
            raise ValueError(f"id {value!r} is not a slug (lowercase words joined by '-')")
        return value

    @field_validator("triggers", "tags")
    @classmethod
    def _non_empty_unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("must list at least one entry")
        if len(set(value)) != len(value):
            raise ValueError(f"lists an entry twice: {list(value)}")
        return value

    @field_validator("text")
    @classmethod
    def _text_is_one_question(cls, value: str) -> str:
        code = _code_in(value)
        if code is not None:
            raise ValueError(f"text must be prose, without code (found {code!r})")
        value = _one_line(value, "text")
        if not value.endswith("?"):
            raise ValueError("text must end with '?'")
        if value.count("?") != 1:
            raise ValueError("text must be exactly one question (one '?')")
        lowered = value.lower()
        for phrase in _FIX_PHRASES:
            if phrase in lowered:
                raise ValueError(f"text must ask, not state the fix (found {phrase!r})")
        return value

    @field_validator("hypothesis", "measurement", "origin")
    @classmethod
    def _prose_line(cls, value: str, info: ValidationInfo) -> str:
        value = _one_line(value, info.field_name or "field")
        if "`" in value:
            raise ValueError("must not contain backticks")
        return value


class Bank(BaseModel):
    """The whole bank: an ordered list of questions with unique ids.

    Attributes:
        questions: The questions, in file order (selection draws from this order, so a seeded
            run is reproducible).

    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    questions: list[Question]

    @model_validator(mode="after")
    def _ids_unique(self) -> Bank:
        counts = Counter(q.id for q in self.questions)
        duplicates = sorted(qid for qid, n in counts.items() if n > 1)
        if duplicates:
            raise ValueError(f"duplicate question ids: {duplicates}")
        return self

    def for_trigger(self, trigger: Trigger) -> list[Question]:
        """Questions that may be asked at ``trigger``, in bank order.

        Args:
            trigger: The decision point.

        Returns:
            The matching questions.

        Raises:
            ValueError: ``trigger`` is not one of :data:`TRIGGERS`.

        """
        if trigger not in TRIGGERS:
            raise ValueError(f"unknown trigger {trigger!r}; expected one of {list(TRIGGERS)}")
        return [q for q in self.questions if trigger in q.triggers]

    def get(self, question_id: str) -> Question | None:
        """The question with id ``question_id``, or None.

        Args:
            question_id: A question id.

        Returns:
            The question, or None when the bank has no such id.

        """
        return next((q for q in self.questions if q.id == question_id), None)


class BankError(ValueError):
    """A bank file is missing or malformed; the message is one line naming the file."""


def _location(loc: Sequence[int | str], data: Any) -> str:
    """Render a pydantic error location, naming the question's id where it has one.

    Args:
        loc: The error's location, e.g. ``("questions", 3, "colour")``.
        data: The raw data that was validated.

    Returns:
        E.g. ``"questions[3] (id 'x').colour"``.

    """
    parts: list[str] = []
    node: Any = data
    for item in loc:
        if isinstance(item, int):
            label = f"[{item}]"
            if isinstance(node, list) and 0 <= item < len(node):
                node = node[item]
                if isinstance(node, dict) and isinstance(node.get("id"), str):
                    label += f" (id {node['id']!r})"
            else:
                node = None
            parts.append(label)
        else:
            parts.append(f".{item}" if parts else item)
            node = node.get(item) if isinstance(node, dict) else None
    return "".join(parts) or "top level"


def _describe(error: ValidationError, data: Any) -> str:
    """One line describing a validation error (the first problem, and how many others).

    Args:
        error: The pydantic error.
        data: The raw data that was validated.

    Returns:
        The description.

    """
    problems = error.errors(include_url=False)
    first = problems[0]
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = f"unknown key {str(first['loc'][-1])!r}"
    elif first["type"] == "missing":
        msg = f"missing key {str(first['loc'][-1])!r}"
    elif first["type"] == "literal_error":
        msg = f"{msg}; got {first['input']!r}"
    text = f"{_location(first['loc'], data)}: {msg}"
    if len(problems) > 1:
        text += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return " ".join(text.split())


def _unique_key_loader() -> Any:
    """A YAML safe loader that rejects duplicate keys in a mapping (PyYAML keeps the last)."""

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: list[Any] = []
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.append(key)
        result: dict[Any, Any] = loader.construct_mapping(node, deep=deep)
        return result

    loader: Any = type("_UniqueKeyLoader", (yaml.SafeLoader,), {})
    loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return loader


def _yaml_problem(error: Exception) -> str:
    """One line describing a YAML error, with its line number where PyYAML gives one."""
    problem = getattr(error, "problem", None) or str(error)
    mark = getattr(error, "problem_mark", None)
    where = f"line {mark.line + 1}: " if mark is not None else ""
    return " ".join(f"invalid YAML: {where}{problem}".split())


def load_bank(path: Path | Traversable | None = None) -> Bank:
    """Load and validate a bank file.

    Args:
        path: The YAML file; default :data:`DEFAULT_BANK_PATH` (the packaged
            ``bank/questions.yaml``).

    Returns:
        The validated bank.

    Raises:
        BankError: The file is missing, is not valid YAML, or fails validation; the message is
            one line naming the file and the first problem.

    """
    path = DEFAULT_BANK_PATH if path is None else path
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BankError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = yaml.load(raw, Loader=_unique_key_loader())
    except yaml.YAMLError as exc:
        raise BankError(f"{path}: {_yaml_problem(exc)}") from exc
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise BankError(f"{path}: expected a mapping with a 'questions' list, got {kind}")
    try:
        return Bank.model_validate(data)
    except ValidationError as exc:
        raise BankError(f"{path}: {_describe(exc, data)}") from exc
