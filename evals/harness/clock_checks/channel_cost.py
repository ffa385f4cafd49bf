"""The channel's own round trip, measured by the parent alone.

The wall-clock check subtracts the cost of a request's round trip from each batch it times.
Measured on the candidate's worker, that cost would be the candidate's to inflate (a slow
no-op shrinks every figure it is subtracted from), so the parent measures it on a channel of
its own: a socket pair, the same framing, and an echo thread that answers at once.
"""

from __future__ import annotations

import socket
import threading
import time

from evals.harness.worker_link import channel

__all__ = ["round_trip_s"]


def _echo(sock: socket.socket) -> None:
    """Answer every message with a short header until the channel closes."""
    try:
        while True:
            header, _ = channel.recv(sock)
            channel.send(sock, {"ok": True, "n": header.get("n", 0), "batch_s": 0.0})
    except (channel.ChannelClosed, OSError):
        return


def round_trip_s(tries: int = 24) -> float:
    """The smallest round trip of a ``wall`` no-op over ``tries``, seconds.

    The smallest errs towards subtracting too little: a slower-looking candidate.
    """
    ours, theirs = socket.socketpair()
    echo = threading.Thread(target=_echo, args=(theirs,), daemon=True)
    echo.start()
    best = float("inf")
    try:
        for _ in range(tries):
            t0 = time.perf_counter()
            channel.send(ours, {"op": "wall", "n": 0})
            channel.recv(ours)
            best = min(best, time.perf_counter() - t0)
    finally:
        ours.close()
        echo.join(timeout=5.0)
        theirs.close()
    return best
