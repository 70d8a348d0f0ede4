"""rulesgen/interrupts.py in-process: SIGTERM unwinds like Ctrl-C, and deferred() holds both back until its block
ends (tests/test_interrupts.py interrupts real renders in a subprocess)."""
import os
import signal
import threading
import time

import pytest

from rulesgen.interrupts import EXIT_CODES, Terminated, deferred, install, signal_of


@pytest.fixture
def sigterm_restored():
    old = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, old)


def test_exit_codes_are_128_plus_the_signal():
    assert EXIT_CODES == {signal.SIGINT: 130, signal.SIGTERM: 143}


def test_which_signal_an_interrupt_was():
    assert signal_of(Terminated()) == signal.SIGTERM
    assert signal_of(KeyboardInterrupt()) == signal.SIGINT
    assert issubclass(Terminated, KeyboardInterrupt)  # every `except KeyboardInterrupt` / finally sees it


def test_install_makes_sigterm_raise_terminated(sigterm_restored):
    install()
    cleaned = []
    with pytest.raises(Terminated):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            cleaned.append(True)
    assert cleaned == [True]


def test_install_outside_the_main_thread_leaves_the_handler(sigterm_restored):
    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=install)
    thread.start()
    thread.join()
    assert signal.getsignal(signal.SIGTERM) is before


def test_deferred_runs_the_block_to_its_end_then_raises(sigterm_restored):
    install()
    steps = []
    with pytest.raises(Terminated):
        with deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            steps.append("after the signal")  # still runs: the signal is blocked
            steps.append("end of block")
    assert steps == ["after the signal", "end of block"]


def test_deferred_delivers_sigint_as_keyboard_interrupt_after_the_block():
    steps = []
    with pytest.raises(KeyboardInterrupt) as info:
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("done")
    assert steps == ["done"] and not isinstance(info.value, Terminated)


def test_deferred_restores_the_handlers_and_holds_nothing_outside_the_main_thread(sigterm_restored):
    install()
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with deferred():
        assert all(signal.getsignal(s) is not h for s, h in before.items())
    assert {s: signal.getsignal(s) for s in before} == before
    seen = []
    thread = threading.Thread(target=lambda: seen.append(_handlers_inside_deferred()))
    thread.start()
    thread.join()
    assert seen == [before]


def _handlers_inside_deferred():
    with deferred():
        return {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}


def test_deferred_holds_a_signal_another_thread_takes(sigterm_restored):
    """A signal sent to the process may be taken by any thread that does not block it (here a thread
    waiting on a subprocess, as the test suite's replay pool does); Python runs the handler in the main
    thread at once. deferred() still holds it until its block ends."""
    import subprocess
    import sys
    install()
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    waiter = threading.Thread(target=child.wait)  # waits until the block below has ended and stdin is closed
    waiter.start()
    steps = []
    try:
        with pytest.raises(Terminated):
            with deferred():
                os.kill(os.getpid(), signal.SIGTERM)
                for _ in range(20):  # time for the other thread to take it, and bytecode boundaries
                    time.sleep(0.01)  # at which Python would run a pending handler
                steps.append("end of block")
    finally:
        child.stdin.close()
        waiter.join()
    assert steps == ["end of block"]


def test_a_held_signal_whose_handler_was_ignore_is_dropped():
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, old)
