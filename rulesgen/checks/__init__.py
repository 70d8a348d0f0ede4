"""`rulesgen lint`: offline checks of Prometheus rule files beyond promtool, in the manner of cloudflare/pint, and
of Grafana dashboards (*.json), in the manner of grafana/dashboard-linter.

One module per check (or per family sharing all its code), each declaring its Check (code, severity,
contract, a doc line, the scope its function reads) beside its function; registry.py lists them in a
stable order; runner.py loads the files once and runs them. Every finding is an errors.Diagnostic,
printed `file:line:col: severity[code]: message` like every other rulesgen diagnostic.

    base.py      Check, the Files / Group / Rule views a check reads, Hit
    dashboard_view.py  the Dashboard view the dashboard checks read (and Board: every dashboard given)
    registry.py  CHECKS (code -> Check, in the docs' order), check_of
    runner.py    lint_files: load, run, filter the contract checks, sort
"""
from .registry import CHECKS, check_of
from .runner import lint_files

__all__ = ["CHECKS", "check_of", "lint_files"]
