"""rulesgen/cli/__main__.py: `python -m rulesgen.cli` runs the `rulesgen` group with the process' arguments
(imported here in-process, the arguments set to --version and to a usage error)."""
import signal
import sys

import pytest

from rulesgen.cli.app import version


@pytest.fixture(autouse=True)
def fresh_main(monkeypatch):
    """Import __main__ anew each time, and keep the SIGTERM handler the group installs out of pytest."""
    monkeypatch.delitem(sys.modules, "rulesgen.cli.__main__", raising=False)
    previous = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, previous)


def test_module_run_prints_the_version(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["rulesgen", "--version"])
    with pytest.raises(SystemExit) as info:
        from rulesgen.cli import __main__
        pytest.fail(f"{__main__.__name__} returned instead of exiting")
    assert info.value.code == 0
    assert capsys.readouterr().out == f"rulesgen {version()}\n"


def test_module_run_reads_the_arguments(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["rulesgen", "no-such-command"])
    with pytest.raises(SystemExit) as info:
        from rulesgen.cli import __main__
        pytest.fail(f"{__main__.__name__} returned instead of exiting")
    assert info.value.code == 2 and "No such command 'no-such-command'" in capsys.readouterr().err
