"""Command line. The only package that prints or exits: 0 ok, 1 findings/errors, 2 usage.
app.py holds the `rulesgen` group and what the commands share; each other module holds commands."""
from .app import main
from .backfill import backfill_group
from .inventory import explain, list_cmd
from .outputs import check, init, lint, push_cmd, render, test
from .replay import replay_cmd

for _command in (render, check, test, replay_cmd, push_cmd, list_cmd, init, lint, explain, backfill_group):
    main.add_command(_command)

__all__ = ["main"]
