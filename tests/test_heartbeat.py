"""Long commands print a line at least every 30 s without a terminal (issue 41)."""

import io
import threading

from evals import inspect_cli
from evals.heartbeat import EVERY_S, heartbeat


class Tty(io.StringIO):
    def isatty(self):
        return True


def _wait_for_lines(stream, count, done):
    # waits on the lines themselves, never on a time: holds on a loaded machine
    while stream.getvalue().count("\n") < count:
        done.wait(0.01)


def test_without_a_terminal_a_line_comes_at_each_beat_and_names_the_newest_log(tmp_path):
    (tmp_path / "2026-12-05_run_abc.eval").write_text("")
    out, done = io.StringIO(), threading.Event()
    with heartbeat("eval tasks/cpu_attention", log_dir=tmp_path, every_s=0.02, stream=out):
        _wait_for_lines(out, 2, done)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[kernelseek] eval tasks/cpu_attention: still running, ")
    assert "2026-12-05_run_abc.eval" in lines[0]
    after = out.getvalue()
    done.wait(0.1)  # five beats' time: none may come once the body has ended
    assert out.getvalue() == after
    assert EVERY_S <= 30


def test_a_terminal_gets_no_heartbeat_since_inspect_draws_its_own_display():
    out = Tty()
    with heartbeat("eval", every_s=0.01, stream=out):
        threading.Event().wait(0.1)
    assert out.getvalue() == ""


def test_the_inspect_cli_beats_while_inspect_runs(monkeypatch, tmp_path):
    out, done = io.StringIO(), threading.Event()

    def fake_inspect(args):
        _wait_for_lines(out, 1, done)  # returns only once a beat came while "Inspect" ran
        return 0

    monkeypatch.setattr(inspect_cli, "run_inspect", fake_inspect)
    monkeypatch.setattr(inspect_cli, "heartbeat", lambda what, **kw: heartbeat(
        what, every_s=0.02, stream=out, **kw))
    assert inspect_cli.main(["list", "tasks", "--log-dir", str(tmp_path)]) == 0
    assert out.getvalue().startswith("[kernelseek] inspect list tasks: still running")
