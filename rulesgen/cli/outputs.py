"""Commands that write or verify the outputs: render, check, test, init, lint, push."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from .. import artifacts as arts
from ..engines.replay import run_promtool_test
from ..engines.tools import ToolMissing
from ..errors import RulesgenError
from .app import (
    apply_size_warnings, catalog_option, check_out_folder, config_option, config_path, defaults_option, diff_option,
    emit_json, error, fail, format_option, out_option, placeholder_url_warnings, plan_or_fail, render_config,
    scenario_warnings, styled, with_common)


def _print_diff(changes) -> None:
    """Unified diffs on stdout, +/- lines coloured on a terminal."""
    colours = {"+": "green", "-": "red", "@": "cyan"}
    for change in changes:
        for line in arts.unified_diff(change).splitlines():
            head = line.startswith(("+++", "---"))
            click.echo(click.style(line, bold=True) if head else
                       click.style(line, fg=colours[line[0]]) if line[:1] in colours else line)


allow_downgrade_option = click.option(
    "--allow-downgrade", is_flag=True,
    help="Render although rulesgen.lock pins a newer rulesgen than the installed one (the lock is then pinned to this one).")


@click.command()
@with_common
@defaults_option
@out_option
@diff_option
@allow_downgrade_option
@click.option("--force", is_flag=True,
              help="Overwrite generated files edited by hand (or made read-only) since the last render "
                   "(rulesgen.manifest lists what it wrote); without it such files stop the render.")
def render(catalog, config, scenarios, scenario_tests, defaults, out, show_diff, allow_downgrade, force):
    """Render every output file (all or none). --diff: write nothing, print what would change."""
    config = render_config(config, defaults)
    plan = plan_or_fail(catalog, config, scenarios, parse_with_promtool=True, scenario_tests=scenario_tests)
    if show_diff:
        changes = arts.changes(Path(out), plan.artifacts)
        _print_diff(changes)
        click.echo(f"dry run: {len(changes)} of {len(plan.artifacts)} files would change in {out}; nothing written", err=True)
        return
    check_out_folder(out, len(plan.artifacts))
    pin = _lock_gate(Path(out), allow_downgrade)
    earlier = arts.earlier_render(Path(out))
    changed = arts.write_all(Path(out), plan.artifacts, force=force)
    scenario_warnings(plan, scenarios)
    placeholder_url_warnings(plan.settings)
    apply_size_warnings(plan)
    click.echo(f"rendered {len(plan.artifacts)} files ({len(changed)} changed) into {out}")
    for name in changed:
        click.echo(f"  {name}")
    _update_lock(Path(out), pin, earlier)


def _lock_gate(root: Path, allow_downgrade: bool):
    """The lock's pin before a render writes anything: a lock of lines not its own is an error, and a pin newer
    than the installed rulesgen refuses the render (it would downgrade every output) unless allowed."""
    from .. import lock
    try:
        pin = lock.read(root)
    except RulesgenError as exc:
        fail(exc)
    if pin is not None and lock.newer_than_installed(pin) and not allow_downgrade:
        name, version = lock.installed()
        error(f"{root / lock.LOCK} pins {pin.name}=={pin.version}, newer than the installed {name}=={version}: a render "
              f"would downgrade the outputs and the lock. Install the pinned one (python -m pip install -r "
              f"{root / lock.LOCK}), or pass --allow-downgrade to render with {version} on purpose; nothing written")
        sys.exit(1)
    return pin


def _update_lock(root: Path, pin, earlier_render: bool) -> None:
    """After a render: the lock pins the rulesgen that rendered. A missing lock is written (with a warning where
    an earlier render had one: it was deleted); another version's pin is rewritten, with a warning."""
    from .. import lock
    name, version = lock.installed()
    if pin is not None and lock.same(pin):
        return
    lock.write(root, pin)
    if pin is None and not earlier_render:
        click.echo(f"wrote {lock.LOCK} (pins {name}=={version}): commit it with the outputs")
    elif pin is None:
        click.echo(f"warning: {root / lock.LOCK} was missing: recreated it, pinning {name}=={version}. Commit it with "
                   "the outputs (`rulesgen check` fails without it).", err=True)
    else:
        click.echo(f"warning: rulesgen.lock pinned {pin.name}=={pin.version}; rendered with {name}=={version} and updated "
                   "the lock. Commit it with the outputs (an upgrade for everyone), or install the pinned version and "
                   "render again.", err=True)


def lock_mismatch(root: Path) -> str | None:
    """Why the lock does not pin the installed rulesgen (missing, or another version), else None; a lock of
    lines not its own raises RulesgenError."""
    from .. import lock
    pin, (name, version) = lock.read(root), lock.installed()
    if pin is None:
        return (f"{root / lock.LOCK} is missing: nothing pins the rulesgen that renders these outputs. `rulesgen render` "
                f"recreates it (pinning {name}=={version}); commit it.")
    if lock.same(pin):
        return None
    return (f"rulesgen.lock pins {pin.name}=={pin.version} but {name}=={version} is installed: its render may differ. "
            f"Run `python -m pip install -r {root / lock.LOCK}` (what CI runs), or upgrade on purpose with "
            "`make render` and commit the outputs with the new lock.")


@click.command()
@with_common
@defaults_option
@out_option
@diff_option
@format_option
def check(catalog, config, scenarios, scenario_tests, defaults, out, show_diff, fmt):
    """Fail (exit 1) when the committed outputs differ from a fresh render; --diff shows how."""
    config = render_config(config, defaults, "check")
    plan = plan_or_fail(catalog, config, scenarios, parse_with_promtool=True, scenario_tests=scenario_tests)
    changes = arts.changes(Path(out), plan.artifacts)
    try:
        mismatch = lock_mismatch(Path(out))
    except RulesgenError as exc:
        fail(exc)
    if fmt == "json":
        emit_json({"files": len(plan.artifacts), "up_to_date": not changes, "lock_mismatch": mismatch,
                   "changes": [{"path": c.path, "state": c.state, **({"diff": arts.unified_diff(c)} if show_diff else {})}
                               for c in changes]})
        sys.exit(1 if changes or mismatch else 0)
    if mismatch:
        error(mismatch)
        if not changes:
            sys.exit(1)
    if changes:
        if show_diff:
            _print_diff(changes)
        for d in arts.differences(Path(out), plan.artifacts):
            click.echo(d, err=True)
        click.echo("outputs are stale: run `make render` and commit the result", err=True)
        sys.exit(1)
    click.echo(f"{len(plan.artifacts)} generated files are up to date")


@click.command()
@with_common
@defaults_option
@out_option
@allow_downgrade_option
def test(catalog, config, scenarios, scenario_tests, defaults, out, allow_downgrade):
    """Render, then run promtool on every scenario test in tests/promtool/. Where the tests are not among the
    outputs (outputs.scenario_tests: false, or --no-scenario-tests), they run in a temporary folder and
    nothing is written to --out."""
    config = render_config(config, defaults)
    plan = plan_or_fail(catalog, config, scenarios, scenario_tests=True)
    keep = plan.settings.outputs.scenario_tests if scenario_tests is None else scenario_tests
    scenario_warnings(plan, scenarios)
    with tempfile.TemporaryDirectory(prefix="rulesgen-test-") as scratch:
        root = Path(out) if keep else Path(scratch)
        if keep:
            check_out_folder(out, len(plan.artifacts))
            pin, earlier = _lock_gate(root, allow_downgrade), arts.earlier_render(root)
        arts.write_all(root, plan.artifacts)
        if keep:
            _update_lock(root, pin, earlier)
        files = sorted(root / a.path for a in plan.artifacts if a.path.startswith("tests/promtool/"))
        if not files:
            click.echo("no scenarios found", err=True)
            sys.exit(1)
        try:
            results = _promtool_each(files)
        except ToolMissing as exc:
            error(str(exc))
            sys.exit(1)
    failed = _report_failures(plan, files, results)
    for path, (_, output) in zip(files, results):
        click.echo(f"promtool test rules {path.relative_to(root).as_posix()}:\n{output.strip(chr(10))}")
    click.echo(f"{len(failed)} of {len(files)} scenario test(s) failed" if failed else f"{len(files)} scenario test(s) passed")
    sys.exit(1 if failed else 0)


def _promtool_each(files: list[Path]) -> list[tuple[int, str]]:
    """promtool test rules on each file alone, in parallel: its output then belongs to one scenario (promtool
    3 does not say which file a failure is in)."""
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(max_workers=max(1, min(len(files), os.cpu_count() or 1))) as pool:
        return list(pool.map(lambda f: run_promtool_test([f]), files))


def _report_failures(plan, files: list[Path], results) -> list[str]:
    """Each failed scenario and what it expected, in rulesgen's words, before promtool's own output."""
    from ..engines.replay import explain_failures
    alert_names: dict[str, list[str]] = {}
    for r in plan.rules.rules:
        if r.alert and r.failure_mode and r.alert not in alert_names.setdefault(r.failure_mode, []):
            alert_names[r.failure_mode].append(r.alert)
    by_name = {s.name: s for s in plan.scenarios}
    failed = []
    for path, (rc, output) in zip(files, results):
        if rc == 0:
            continue
        scenario = by_name[path.stem]
        failed.append(scenario.name)
        click.echo(f"FAIL {scenario.path} (scenario {scenario.name}, test tests/promtool/{scenario.name}.yaml):")
        for line in explain_failures(scenario, output, alert_names):
            click.echo(f"  - {line}")
    if failed:
        click.echo("`rulesgen replay SCENARIO` shows what fired and when. promtool's output follows.\n")
    return failed


@click.command()
@click.argument("directory", default=".", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite existing files, keeping each replaced one as NAME.bak (NAME.bak.N when taken).")
def init(directory, force):
    """Scaffold a GitOps repository in DIRECTORY: rulesgen.yaml, Makefile, CI workflow, example scenario."""
    from ..catalog import bundled_catalog_dir, load_catalog
    from ..init import next_steps, scaffold
    written, skipped, notes = scaffold(Path(directory), force)
    for rel in written:
        click.echo(f"wrote {rel}")
    for rel in skipped:
        click.echo(f"kept existing {rel} (use --force to overwrite)")
    for note in notes:
        click.echo(f"note: {note}")
    where = "" if directory == "." else f"cd {directory}, "
    click.echo(f"\nnext: {where}run `make render` and commit everything (rulesgen.lock and rulesgen.manifest too); CI runs `make check`, "
               "lint and the engines.\nThen, in this order:")
    for i, step in enumerate(next_steps(load_catalog(bundled_catalog_dir())), 1):
        click.echo(f"  {i}. {step}")


@click.command()
@click.argument("files", nargs=-1, type=click.Path(exists=True))
@catalog_option
@config_option
@click.option("--contract", is_flag=True,
              help="Also hold rule files rulesgen did not generate to rulesgen's contract (labels severity, "
                   "failure_mode, action; annotations summary, description, runbook_url, dashboard_url).")
@format_option
def lint(files, catalog, config, contract, fmt):
    """Offline checks of rule FILES and Grafana dashboards (*.json; default alerts/prometheus/*.yaml,
    alerts/sharded/*/*.yaml and dashboards/*.json), in the manner of pint and grafana/dashboard-linter.

    A folder stands for its *.yaml, *.yml and *.json files: a deployment folder (rule files, PrometheusRule or VMRule
    objects, a kustomization) fails tier-mix when it holds two tiers.

    A file whose header declares `# Tier shard (` (alerts/sharded/shard/) may hold only local and partial
    rules (tier-local), judged with every file given (lint alerts/sharded/*/*.yaml).

    Rate windows, `for`, long raw windows and instant reads of slow records apply to every file; the
    rulesgen contract applies to rulesgen's own files (its header, groups named rulesgen-*) or with --contract.
    The labels each failure mode's alerts must carry come from its scope in --catalog and the label names in
    --config (scope-identity).

    Dashboards are judged together (their links' targets are among them) by grafana/dashboard-linter's rules
    that apply and rulesgen's own; a series a panel reads must be recorded by --catalog's rules (with --config)
    or by a rule file given, or be a catalog metric (docs/cli.md lists the checks and the rules left out)."""
    from ..catalog import load_catalog
    from ..checks import lint_files
    from ..checks.dashboard_view import catalog_series
    from ..checks.scope_identity import mode_identity
    paths = [p for f in files for p in _expand(Path(f))] if files else (
        sorted(Path("alerts/prometheus").glob("*.yaml")) + sorted(Path("alerts/sharded").glob("*/*.yaml"))
        + sorted(Path("dashboards").glob("*.json")))
    if files and not paths:
        raise click.UsageError(f"nothing to lint in {', '.join(files)}: a folder stands for its *.yaml, *.yml and "
                               "*.json files, and it has none")
    try:
        from ..load.settings import load_settings
        settings = load_settings(config_path(config))
        loaded = load_catalog(Path(catalog))
        identity = mode_identity(loaded, settings)
        series = catalog_series(loaded, settings) if any(p.suffix == ".json" for p in paths) else None
    except RulesgenError as exc:
        fail(exc)
    from ..promql.tiers import partition_labels
    if not paths:
        raise click.UsageError(f"nothing to lint here ({Path.cwd()}): alerts/prometheus/*.yaml, alerts/sharded/*/*.yaml "
                               "and dashboards/*.json match nothing; run `rulesgen render` first, or name the "
                               "files: rulesgen lint FILE...")
    findings = lint_files(paths, settings.scrape_interval, contract=True if contract else None,
                          max_rules=settings.max_rules_per_group, partition=partition_labels(settings),
                          cluster_label=settings.cluster_label, identity=identity, series=series)
    if fmt == "json":
        emit_json({"files": [str(p) for p in paths],
                   "findings": [{"path": f.path, "line": f.line, "col": f.col, "severity": f.severity, "code": f.code,
                                 "message": f.message} for f in findings]})
    else:
        for f in findings:
            click.echo(styled(str(f)))
        click.echo(f"{len(paths)} file(s), {len(findings)} finding(s)", err=True)
    sys.exit(1 if findings else 0)


def _expand(path: Path) -> list[Path]:
    """A folder's YAML files and Grafana dashboards (lint DIR), else the file itself."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
    return [path]


@click.command(name="push")
@click.option("--grafana-url", required=True, help="Grafana base URL, e.g. https://grafana.example.com")
@click.option("--folder", default=None, help="Grafana folder (default: dashboards.folder in rulesgen.yaml, else GPU).")
@click.option("--timeout", default=10.0, show_default=True, type=click.FloatRange(min=0.1), help="Seconds per HTTP request.")
@click.option("--insecure-http", is_flag=True,
              help="Allow a plain http:// Grafana URL: the token then crosses the network in clear text.")
@catalog_option
@config_option
def push_cmd(grafana_url, folder, timeout, insecure_http, catalog, config):
    """Import the dashboards into a Grafana folder, idempotent by uid (token from GRAFANA_TOKEN)."""
    import json

    from ..engines.push import PushError, check_url, push
    from ..model.conventions import folder_uid
    try:
        check_url(grafana_url, insecure_http)
    except PushError as exc:
        error(str(exc))
        sys.exit(2)
    token = os.environ.get("GRAFANA_TOKEN", "")
    if not token:
        error("GRAFANA_TOKEN is not set: export a Grafana service-account token with Editor rights")
        sys.exit(2)
    plan = plan_or_fail(catalog, config, None)
    dashboards = [json.loads(a.text) for a in plan.artifacts if a.path.startswith("dashboards/") and a.path.endswith(".json")]
    folder = folder or plan.settings.dashboards.folder
    try:
        pushed = push(grafana_url, token, dashboards, folder, folder_uid(folder), timeout)
    except PushError as exc:
        error(str(exc))
        sys.exit(1)
    for d in pushed:
        click.echo(f"  {d.uid}  {d.title:<20} version {d.version}  {d.url}")
    click.echo(f"pushed {len(pushed)} dashboards into folder {folder!r} at {grafana_url}")
