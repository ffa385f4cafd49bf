"""The worker's output is capped: head and tail kept, the middle counted, kept only on request."""

import subprocess
import sys

from evals.harness import RunSettings, evaluate
from evals.harness.worker_link.worker_log import CappedLog
from tests.helpers import START_CPU

CHATTY = (
    "import sys\nfor i in range(50000):\n"
    "    sys.stdout.write(f'line {i:05d} ' + 'x' * 90 + '\\n')\n"
)


def test_a_chatty_worker_keeps_only_the_head_and_the_tail():
    proc = subprocess.Popen([sys.executable, "-c", CHATTY], stdout=subprocess.PIPE)
    log = CappedLog(proc.stdout, head_bytes=4096, tail_bytes=4096)
    assert proc.wait(timeout=60) == 0  # never blocked on a full pipe
    log.join()
    text = log.text()
    assert log.total == 50000 * 102 and log.dropped > 5_000_000
    assert text.startswith("line 00000") and "line 49999" in text
    assert f"[... {log.dropped} bytes of worker output dropped ...]" in text
    assert len(text) < 9000
    assert log.tail_lines(1)[0].startswith("line 49999")


def test_the_tail_is_capped_whatever_the_chunk_sizes():
    # a pipe read under load can return one chunk larger than the whole tail
    from io import BytesIO

    log = CappedLog(BytesIO(b"h" * 10 + b"x" * 70_000 + b"\nend\n"), head_bytes=10, tail_bytes=100)
    log.join()
    assert log.head == b"h" * 10 and log.text().endswith("x" * 95 + "\nend\n")
    assert log.dropped == 70_000 + 5 - 100


def test_short_output_is_kept_whole():
    proc = subprocess.Popen([sys.executable, "-c", "print('hello'); print('world')"],
                            stdout=subprocess.PIPE)
    log = CappedLog(proc.stdout)
    proc.wait(timeout=60)
    log.join()
    assert log.text() == "hello\nworld\n" and log.dropped == 0


def test_the_worker_log_is_kept_only_when_asked(tmp_path):
    keep = tmp_path / "logs" / "worker.log"
    scenario = ("smoke-bf16-d64-s96-h4k2-causal",)
    evaluate(RunSettings("bench", "cpu_attention", START_CPU, suite="smoke", scenario_ids=scenario,
                         keep_worker_log=keep))
    assert keep.is_file() and keep.read_text().startswith("== worker pid ")
    assert keep.with_name("worker.upstreams.log").is_file()


def test_a_build_says_it_started_ticks_while_compiling_and_says_how_it_ended(tmp_path,
                                                                             monkeypatch):
    from evals.harness.pipeline import runner

    monkeypatch.setattr(runner, "BUILD_TICK_S", 0.2)
    kernel = tmp_path / "mine.cpp"
    kernel.write_text(START_CPU.read_text() + "\n// unique: build progress test\n")
    heard = []
    evaluate(RunSettings("check", "cpu_attention", kernel, suite="smoke",
                         scenario_ids=("smoke-bf16-d64-s96-h4k2-causal",),
                         cache_dir=tmp_path / "cache"), notify=heard.append)
    assert heard[0] == "building mine.cpp for cpu_attention"
    assert any(h.startswith("building mine.cpp: ") and h.endswith(" s") for h in heard)
    assert any(h.startswith("built mine.cpp (") for h in heard)
