"""The gate on a CUDA stream (``pytest -m gpu``): work queued behind it waits for the opening,
then receives the payload written at the opening (evals/harness/measurement/stream_gate.py)."""

import time

import pytest
import torch

from evals.harness.measurement.stream_gate import DeviceGate, Gate

pytestmark = [pytest.mark.gpu, pytest.mark.usefixtures("device_alone")]


def test_work_behind_a_closed_gate_waits_and_gets_the_payload_written_at_the_opening():
    gate = Gate()
    device_gate = DeviceGate(gate.fd)
    try:
        payload = torch.zeros(4, dtype=torch.int64, device="cuda")
        after = torch.zeros(1, device="cuda")
        after.add_(0.0)  # loads the add kernel now: a first load behind the gate would hang
        torch.cuda.synchronize()
        device_gate.queue(12345, payload)
        after.add_(1.0)  # queued behind the gate
        time.sleep(0.2)
        assert not torch.cuda.current_stream().query()  # still waiting
        assert not device_gate.is_open(12345)
        values = [3, 1, 4, 1]
        gate.open(12345, b"".join(v.to_bytes(8, "little") for v in values))
        assert device_gate.is_open(12345)  # the worker's host sees the opening too
        torch.cuda.synchronize()
        assert payload.tolist() == values and after.item() == 1.0
    finally:
        torch.cuda.synchronize()
        device_gate.close()
        gate.close()


def test_a_wrong_token_keeps_the_gate_shut():
    gate = Gate()
    device_gate = DeviceGate(gate.fd)
    try:
        payload = torch.zeros(1, dtype=torch.int64, device="cuda")
        device_gate.queue(7, payload)
        gate.open(8, (5).to_bytes(8, "little"))
        assert not device_gate.is_open(7)
        time.sleep(0.2)
        assert not torch.cuda.current_stream().query()
        gate.open(7, (5).to_bytes(8, "little"))
        torch.cuda.synchronize()
        assert payload.item() == 5
    finally:
        torch.cuda.synchronize()
        device_gate.close()
        gate.close()
