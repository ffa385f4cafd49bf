"""Failure codes: every way a run can go wrong, each with a one-line reason."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Code(StrEnum):
    """Machine-readable failure codes carried in verdicts and JSON."""

    # Bad invocation (the harness could not start judging).
    UNKNOWN_TARGET = "unknown_target"
    UNKNOWN_SUITE = "unknown_suite"
    MISSING_FILE = "missing_file"
    BAD_ARGUMENT = "bad_argument"
    # The candidate as a whole.
    BUILD_ERROR = "build_error"
    BUILD_TIMEOUT = "build_timeout"
    LOAD_ERROR = "load_error"
    FORBIDDEN_INCLUDE = "forbidden_include"
    FORBIDDEN_SYMBOL = "forbidden_symbol"
    MISSING_ENTRY_POINT = "missing_entry_point"
    WRONG_SIGNATURE = "wrong_signature"
    # One scenario.
    WRONG_SHAPE = "wrong_shape"
    WRONG_DTYPE = "wrong_dtype"
    WRONG_DEVICE = "wrong_device"
    EXCEPTION = "exception"
    CRASH = "crash"
    SANDBOX_VIOLATION = "sandbox_violation"
    TIMEOUT = "timeout"
    NAN_INF = "nan_inf"
    UNWRITTEN_OUTPUT = "unwritten_output"
    INACCURATE = "inaccurate"
    IMPLAUSIBLE = "implausible"
    HOST_WORK = "host_work"
    TIMING_MISMATCH = "timing_mismatch"
    INPUT_MODIFIED = "input_modified"
    OUTPUT_ALIASED = "output_aliased"
    STALE_RESULT = "stale_result"
    NONDETERMINISTIC = "nondeterministic"
    TRACE_VIOLATION = "trace_violation"
    SKIPPED = "skipped"
    HARNESS_ERROR = "harness_error"
    ENVIRONMENT = "environment"  # the machine lacks what the target needs (GPU, toolkit, FA3)
    HARNESS_MODIFIED = "harness_modified"
    DEVICE_BUSY = "device_busy"


PARENT_ONLY = frozenset(
    {
        Code.UNKNOWN_TARGET,
        Code.UNKNOWN_SUITE,
        Code.MISSING_FILE,
        Code.BAD_ARGUMENT,
        Code.SKIPPED,
        Code.HARNESS_ERROR,
        Code.ENVIRONMENT,
        Code.HARNESS_MODIFIED,
        Code.DEVICE_BUSY,
    }
)
"""Codes only the parent gives, from what it sees in its own processes or the upstreams'
worker: one reported by a process that compiled or loaded the candidate is the candidate's."""


@dataclass(frozen=True)
class Failure:
    """A failure with its code and a one-line, human-readable reason."""

    code: Code
    reason: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", one_line(self.reason))

    def to_json(self) -> dict[str, str]:
        """Return the JSON form: ``{"code": ..., "reason": ...}``."""
        return {"code": self.code.value, "reason": self.reason}

    @classmethod
    def from_json(cls, raw: object) -> Failure:
        """Read :meth:`to_json`'s form back; an unknown code reads as a harness error."""
        data = raw if isinstance(raw, dict) else {}
        try:
            code = Code(str(data.get("code")))
        except ValueError:
            code = Code.HARNESS_ERROR
        return cls(code, str(data.get("reason", "worker refused the request")))


class HarnessInputError(Exception):
    """Raised for a bad invocation: unknown target or suite, missing file, bad argument."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.reason)
        self.failure = failure


def one_line(text: str, limit: int = 300) -> str:
    """Collapse text to a single line of at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
