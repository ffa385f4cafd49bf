"""The worker's ``warm`` op: each named upstream called once, before the device's lock is taken.

The parent's side is :mod:`evals.harness.judging.warm_start`. Only upstream code runs here, never a
candidate's: a candidate's first calls belong to the requests that judge it.
"""

from __future__ import annotations

from typing import Any

import torch

from evals.harness.failures import one_line
from evals.harness.scenarios import Scenario
from evals.harness.targets import Target
from evals.harness.worker_link import channel


def warm(target: Target, req: dict[str, Any]) -> tuple[dict[str, Any], channel.Buffer]:
    """Call each upstream of ``req['calls']`` (name -> scenario) once on its inputs.

    A failure is reported, not raised: the judged call on the same upstream fails on its own,
    with its own reason, where it matters.
    """
    failed: dict[str, str] = {}
    for name, raw in req["calls"].items():
        try:
            inputs = target.make_inputs(Scenario(**raw), int(req["seed"]))
            target.upstream(name).prepare(inputs)()
            if target.device == "cuda":
                torch.cuda.synchronize()
        except Exception as exc:
            failed[name] = one_line(f"{type(exc).__name__}: {exc}", 200)
    return {"ok": True, "failed": failed}, b""
