"""Command line. The only package that prints or exits: 0 ok, 1 findings/errors, 2 usage.
app.py holds the `rulesgen` group and what the commands share; each other module holds commands."""
import os
import signal
import threading


def _interrupted_while_loading(signum, frame):
    """Ctrl-C while the modules load (nothing is written yet): the one line and exit 130, no traceback."""
    os.write(2, b"rulesgen: interrupted by SIGINT\n")
    os._exit(130)


_main_thread = threading.current_thread() is threading.main_thread()
_previous = signal.signal(signal.SIGINT, _interrupted_while_loading) if _main_thread else None
try:
    from .app import main
    from .backfill import backfill_group
    from .inventory import explain, list_cmd
    from .outputs import check, init, lint, push_cmd, render, test
    from .replay import replay_cmd
finally:
    if _main_thread:
        signal.signal(signal.SIGINT, _previous)

def _help_options(command) -> None:
    """-h as well as --help on the command and its subcommands, also when one is invoked on its own: click caches
    a command's help option the first time it builds it, from the context of that call."""
    command.context_settings.setdefault("help_option_names", ["-h", "--help"])
    for sub in getattr(command, "commands", {}).values():
        _help_options(sub)


for _command in (render, check, test, replay_cmd, push_cmd, list_cmd, init, lint, explain, backfill_group):
    main.add_command(_command)
    _help_options(_command)

__all__ = ["main"]
