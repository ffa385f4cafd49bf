"""The gate's parent side (evals/harness/measurement/stream_gate.py): a shared page, payload
first, then the token; the device side is tests/gpu/test_stream_gate.py."""

import os
import struct
import subprocess
import sys

import pytest

from evals.harness.measurement.stream_gate import PAGE_BYTES, PAYLOAD_OFFSET, Gate
from tests.helpers import ROOT


def test_opening_writes_the_payload_then_the_token_and_shutting_clears_both():
    gate = Gate()
    try:
        gate.open(0xDEADBEEF, b"secret offsets")
        assert struct.unpack_from("<I", gate.page, 0)[0] == 0xDEADBEEF
        assert gate.page[PAYLOAD_OFFSET:PAYLOAD_OFFSET + 14] == b"secret offsets"
        gate.shut()
        assert gate.page[:] == bytes(PAGE_BYTES)
    finally:
        gate.close()


def test_another_process_sees_the_opening_through_the_inherited_descriptor():
    gate = Gate()
    reader = (
        "import mmap, os, struct, sys\n"
        "page = mmap.mmap(int(sys.argv[1]), 4096)\n"
        "print(struct.unpack_from('<I', page, 0)[0], page[64:70].decode())\n"
    )
    try:
        gate.open(7, b"abcdef")
        proc = subprocess.run([sys.executable, "-c", reader, str(gate.fd)], pass_fds=(gate.fd,),
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert proc.stdout.split() == ["7", "abcdef"], proc.stderr
    finally:
        gate.close()


@pytest.mark.parametrize(("token", "payload"), [(0, b""), (2**32, b""), (1, bytes(PAGE_BYTES))])
def test_a_bad_token_or_an_oversized_payload_is_refused(token, payload):
    gate = Gate()
    try:
        with pytest.raises(ValueError):
            gate.open(token, payload)
        assert gate.page[:] == bytes(PAGE_BYTES)  # nothing written
    finally:
        gate.close()


def test_a_gate_is_whole_pages_and_its_descriptor_is_closed_with_it():
    with pytest.raises(ValueError):
        Gate(100)
    gate = Gate(2 * PAGE_BYTES)
    assert gate.capacity == 2 * PAGE_BYTES - PAYLOAD_OFFSET
    fd = gate.fd
    gate.close()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_the_process_it_is_handed_to_cannot_resize_it_under_the_parent():
    gate = Gate()
    shrink = (
        "import os, sys\n"
        "fd = int(sys.argv[1])\n"
        "for size in (0, 1 << 20):\n"
        "    try:\n"
        "        os.ftruncate(fd, size)\n"
        "        print('resized', size)\n"
        "    except PermissionError:\n"
        "        print('sealed')\n"
    )
    try:
        proc = subprocess.run([sys.executable, "-c", shrink, str(gate.fd)], pass_fds=(gate.fd,),
                              capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert proc.stdout.split() == ["sealed", "sealed"], proc.stdout + proc.stderr
        gate.open(3, b"still here")  # no SIGBUS: the page is whole
        assert gate.page[PAYLOAD_OFFSET:PAYLOAD_OFFSET + 10] == b"still here"
    finally:
        gate.close()
