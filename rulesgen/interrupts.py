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
    """SIGINT and SIGTERM wait until the block is done: the block runs to its end, and the interrupt is
    raised right after it (the first one that came, as its own handler would have raised it).

    Held by handlers that only take note, not by the signal mask: a signal sent to the process is taken
    by any thread whose mask lets it in (a pool's, a library's), and Python then runs the handler in the
    main thread at once, so masking the main thread alone would not hold it. Outside the main thread
    (where handlers cannot be set) the block runs as it is, and so does a signal whose handler was not
    set from Python (getsignal() gives None: it could not be put back)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: h for s in SIGNALS for h in [signal.getsignal(s)] if h is not None}
    came: list[int] = []
    for s in previous:
        signal.signal(s, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if came:
            _deliver(came[0], previous[came[0]])


def _deliver(signum: int, handler) -> None:
    """What the signal would have done had it not been held: its handler's exception, the default action, or
    nothing when it was ignored."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        signal.raise_signal(signum)
