"""The Nsight Compute command the ``profile`` tool runs on GPU targets.

``ncu`` follows the harness into its worker process (``--target-processes all``) while the
harness checks one scenario, and prints the SpeedOfLight section of every kernel launched.
The worker runs without its OS sandbox there (``KERNELSEEK_SANDBOX=off``): ncu's code injected
into it changes file modes (on an H200 the sandbox killed it), and a profile is information
for the agent, never a score.
"""

from __future__ import annotations

from evals.harness.sandbox.os_sandbox import SANDBOX_ENV

NCU_SECTIONS = ("--section", "SpeedOfLight", "--csv", "--page", "details")


def ncu_command(
    harness: list[str], *, target: str, kernel: str, suite: str, scenario: str
) -> list[str]:
    """``ncu`` around ``harness check`` of one scenario.

    Args:
        harness: How to start the harness (e.g. ``[python, -P, -m, evals.harness]``).
        target: Target name.
        kernel: The candidate's source file.
        suite: Suite name.
        scenario: The id of the scenario to profile.
    """
    return [
        "env",
        f"{SANDBOX_ENV}=off",
        "ncu",
        *NCU_SECTIONS,
        "--target-processes",
        "all",
        *harness,
        "check",
        "--target",
        target,
        "--kernel",
        kernel,
        "--suite",
        suite,
        "--scenario",
        scenario,
        "--quiet",
    ]
