"""SIGINT and SIGTERM: both raise KeyboardInterrupt (SIGTERM as its subclass Terminated) so that every
`finally` cleans up, and `deferred()` holds them back while a commit must not be cut in half."""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}  # 128 + signal number, as a shell reports it


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt."""


def _raise_terminated(signum, frame):
    raise Terminated()


def install() -> None:
    """Make SIGTERM unwind like SIGINT (the command line calls this; a library user keeps its own handlers)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_terminated)


def signal_of(exc: KeyboardInterrupt) -> signal.Signals:
    return signal.SIGTERM if isinstance(exc, Terminated) else signal.SIGINT


@contextmanager
def deferred():
    """SIGINT and SIGTERM wait until the block is done (blocked, then delivered when it exits): the block
    runs to its end, and the interrupt is raised right after it."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX: nothing to block with
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
