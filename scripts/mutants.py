"""Plant known bugs, one at a time, and see whether the tests catch them (`make mutants`, on demand).

Each bug is an exact text substitution in one file of a throw-away copy of HEAD (`git worktree add --detach`,
removed at the end; uncommitted changes are not in it). The text must be found exactly once: a plant that
no longer applies is reported `stale`, never skipped. After planting, the copy is re-rendered (`rulesgen
render` and `scripts/config_doc.py`, as its author would before committing, so the bug is not caught by a
staleness test alone; a render that fails is a catch), then the command runs in the copy (default: make test). The table says, per bug,
caught or missed and the first failing test id.

The copy runs with this venv: PYTHONPATH puts the copy's rulesgen before the venv's editable install (which
points at the checkout the venv was made in), and make gets VENV=<this venv> with its install stamp and
`tools` marked old (-o), so it neither reinstalls this venv against the copy nor fetches engines: a venv of
the copy's own (pip install -e) would cost more than a plant's whole run. The copy's .tools links to this
checkout's, and its .venv to this venv.

First the command runs on the copy with no bug planted (the control: it must pass, or the run stops there).

usage: scripts/mutants.py [--command CMD] [--only N,N] [--no-render] [--no-control] [--list]; exit 1 when
the control fails or a plant is stale.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FM = "catalog/failure_modes.yaml"


@dataclass(frozen=True)
class Plant:
    bug: str
    path: str
    old: str
    new: str


XID79 = ('          or max by ([[ gpu ]]) (gpu:dcgm_xid_last:info{xid="79"})\n'
         '          or max by ([[ gpu ]]) (max_over_time(gpu:dcgm_xid:recent{xid="79"}[[ w.xid79 ]]))\n')
XID_DRAIN = ('max by ([[ gpu ]], xid) (gpu:dcgm_xid_last:info{xid=~"[[ xid.drain ]]", xid!="79"})\n'
             '          or max by ([[ gpu ]], xid) (gpu:dcgm_xid:recent{xid=~"[[ xid.drain ]]", xid!="79"})')
FB_USED = ('        scale: 9.5367431640625e-7\n        since: "4.9.0"\n        source: "dcgm-exporter 4.9.0 release notes '
           '(DCGM 4.7 field deprecations); new field ids 1603-1648"\n    description: >-\n      Used framebuffer memory')
DRAINING = 'count by ([[ fleet ]]) (max by ([[ fleet ]], [[ host ]], gpu) (ALERTS{alertstate="firing", action="drain"}))\n              / on'
STALE_FILES = ('    found += [Change(p.relative_to(out).as_posix(), "stale", p.read_text(encoding="utf-8", errors="replace"), "")\n'
               '              for p in _stale(out, artifacts)]\n')
EACH_ARTIFACT = "    for a in artifacts:\n        p = out / a.path\n"
REMAP_FOR = "        for: 1m\n        for_source: >-\n          Row-remap failure and the retired-page count"
REMAP_ACTION = "        action: drain\n" + REMAP_FOR
XID_FOR = "        for: 1m\n        for_source: >-\n          An XID is a driver event"
XID_WARN = 'max by ([[ gpu ]], xid) (gpu:dcgm_xid:recent{xid!~"[[ xid.application ]]|[[ xid.drain ]]|79"})'
FABRIC_FOR = "        for: 3m\n        for_source: >-\n          Heuristic: a degraded or unregistered fabric"
DBE_SEVERITY = "      - severity: critical\n        action: drain\n        for: 1m\n        for_source: >-\n          A double-bit"
EXPORTER_FOR = "        for: 5m\n        for_source: >-\n          Heuristic: a dcgm-exporter DaemonSet rollout"

THERMAL_BITS = "          or avg_over_time(gpu:dcgm_clock_event_thermal:active[[ w.recent ]]) >= [[ t.throttled_share ]]\n"
STRAGGLER_JOB = ("          max by ([[ gpu ]]) (quantile_over_time(0.5, gpu:dcgm_sm_clock_vs_job:ratio[[ w.median ]]) < [[ t.clock_ratio ]])\n"
                 "          or ")
TEMP_MIN_DELTA = "    min_delta:\n      value: 5\n      source: >-\n        Healthy GPUs of one node"
PEER_Z = "      - name: peer_z\n        value: 3.5\n"
BASELINE_FOR = "        for: 15m\n        for_source: >-\n          Early warning hours or days ahead"
THERMAL_FOR = "        for: 2m\n        for_source: >-\n          The conditions are medians or shares over 4 minutes"
COVER_EQUAL = '"equal": list(scope["gpu"])})\n    for slo'
PANEL_ID = "conventions.failure_mode_panel_id(view.index_in_group)"
KEEP_FIRING = "keep_firing_for_seconds=settings.keep_firing_for if identity else 0"

THERMAL_MEDIAN = "quantile_over_time(0.5, gpu:dcgm_gpu_temp:max[[ w.recent ]]) >= on"
FROZEN_BUSY = ("\n                  and on ([[ gpu_id ]]) min_over_time(gpu:dcgm_gpu_util:ratio[[ t.window | window ]]) > 0")
FROZEN_SERVED = "\n            and on ([[ gpu_id ]]) gpu:dcgm_power_usage:max offset [[ t.window | duration ]]"
STRAGGLER_RATIO = "      - name: clock_ratio\n        value: 0.8\n"

IDLE_POD = '\n          and on ([[ gpu_id ]]) gpu:dcgm_workload:info{[[ pod ]]!=""}'
COLLAPSE_BUSY = '\n            and min_over_time(gpu:dcgm_gpu_util:ratio[[ w.collapse ]]) >= [[ t.busy_util ]]'

LOSS_RATIO = '      - name: ratio\n        value: 1.2\n'

HISTORY_GUARD = ('    if guard:\n        g = _of(guard.signal)\n        usual = f"{recent(value_record(guard), settings, g)} / '
                 '{recent(conventions.BASELINE_HISTORY_MEAN, settings, g)}"\n')
UTIL_RATIO = "      - name: DCGM_FI_DEV_GPU_UTIL_RATIO\n        unit: ratio\n        scale: 100\n"
XID_48 = '    name: "Double Bit ECC Error"\n    dcgm_health: fail\n    class: reset\n'
XID_APP = 'max by ([[ gpu ]], xid) (gpu:dcgm_xid:recent{xid=~"[[ xid.application ]]"})'
LOST_SCOPE = ("max by ([[ node ]]) (gpu:dcgm_reporting:timestamp)\n"
              "              - on ([[ node ]]) group_right () gpu:dcgm_reporting:timestamp")

SETTINGS = "rulesgen/load/settings.py"
AM_BUILDER = "rulesgen/builders/alertmanager.py"
AM_GROUPING = '"group_by": [cluster, host, "failure_mode"],\n            **timings,\n            "routes"'

UNKNOWN_KEY = ("    def done(self) -> None:\n        known = sorted(self.seen)\n        for key in self.node:\n"
               "            if key not in self.seen:\n                self.errors.add(self.at(key), \"unknown-key\",\n"
               "                                f\"{self.what}: unknown key {key!r}{_did_you_mean(key, known)}\")\n")

DASH_CONTEXT = "rulesgen/builders/dashboards/context.py"

XID_JOBS = "            group by ([[ gpu ]], xid, [[ ns ]], workload) (\n"
DRAINING_GPUS = "count by ([[ fleet ]]) (max by ([[ fleet ]], [[ host ]], gpu) (ALERTS{alertstate=\"firing\", action=\"drain\"}))\n              / on"
XID31_JOB = ("      group by ([[ gpu_id ]], [[ ns ]], [[ pod ]])\n"
             "      (topk by ([[ gpu_id ]]) (1, last_over_time(gpu:dcgm_xid:onset{xid=~\"[[ xid.application ]]\"}")
NODE_PEERS = '(("node", (*s.node_labels, "modelName", "signal"), t["node_peers_min"]),'


PLANTS = [
    Plant("ECC DBE alert: volatile count compared < 0, not > 0", FM,
          "gpu:dcgm_ecc_dbe_volatile:max > [[ t.errors ]]", "gpu:dcgm_ecc_dbe_volatile:max < [[ t.errors ]]"),
    Plant("gpu_lost (XID 79): gpu dropped from by (...)", FM, XID79, XID79.replace("[[ gpu ]]", "[[ node ]], UUID, modelName")),
    Plant("ECC DBE alert: for 1m doubled to 2m", FM, "        for: 1m\n        for_source: >-\n          A double-bit",
          "        for: 2m\n        for_source: >-\n          A double-bit"),
    Plant("YAML loader: duplicate keys checked in the wrong dict", "rulesgen/load/yamlsource.py",
          "            if key in result:\n", "            if key in result.body_where:\n"),
    Plant("4.9 rename skipped: DCGM_FI_DEV_GPU_TEMP_CELSIUS alias dropped", "catalog/metrics.yaml",
          '    aliases:\n      - name: DCGM_FI_DEV_GPU_TEMP_CELSIUS\n        since: "4.9.0"\n', ""),
    Plant("21 rules allowed in a group of a 20-rule limit (Mimir's)", "rulesgen/builders/engine_fit.py",
          "    if limit <= 0 or n <= limit:\n        return [run]\n", "    if limit <= 0 or n <= limit + 1:\n        return [run]\n"),
    Plant("remote-write allowlist: first failure mode's ALERTS not forwarded", "rulesgen/render/sharded.py",
          "'|'.join(read['failure_mode'])", "'|'.join(read['failure_mode'][1:])"),
    Plant("rulesgen check: a file no longer generated is ignored", "rulesgen/artifacts.py", STALE_FILES, ""),
    Plant("FB_USED_BYTES scaled to KiB (1/1024), not MiB", "catalog/metrics.yaml", FB_USED,
          FB_USED.replace("9.5367431640625e-7", "9.765625e-4")),
    Plant("fleet_capacity_degraded: cluster dropped from the draining GPUs' max by", FM, DRAINING,
          DRAINING.replace("max by ([[ fleet ]], [[ host ]], gpu)", "max by ([[ host ]], gpu)")),
    Plant("critical XID alert: xid dropped from by (...)", FM, XID_DRAIN, XID_DRAIN.replace("[[ gpu ]], xid", "[[ gpu ]]")),
    Plant("rulesgen check: alertmanager/rulesgen.yaml ignored", "rulesgen/artifacts.py", EACH_ARTIFACT,
          EACH_ARTIFACT.replace("        p =", '        if a.path == "alertmanager/rulesgen.yaml":\n            continue\n        p =')),
    # 2026-12-01: the second alert of a mode, a severity, an action and the SLO tiers (plants 1-12 held each mode once)
    Plant("memory_remap critical alert: for 1m doubled to 2m", FM, REMAP_FOR, REMAP_FOR.replace("for: 1m", "for: 2m")),
    Plant("critical XID alert: for 1m doubled to 2m", FM, XID_FOR, XID_FOR.replace("for: 1m", "for: 2m")),
    Plant("warning XID alert: xid dropped from by (...)", FM, XID_WARN, XID_WARN.replace("[[ gpu ]], xid", "[[ gpu ]]")),
    Plant("nvlink_fabric warning alert: for 3m doubled to 6m", FM, FABRIC_FOR, FABRIC_FOR.replace("for: 3m", "for: 6m")),
    Plant("ECC DBE alert: severity critical made warning (no page)", FM, DBE_SEVERITY,
          DBE_SEVERITY.replace("severity: critical", "severity: warning")),
    Plant("SLO fast burn tier: budget share 2% doubled (factor 14.4 -> 28.8)", "catalog/slos.yaml",
          "    short: 5m\n    budget_share: 0.02\n", "    short: 5m\n    budget_share: 0.04\n"),
    Plant("memory_remap: 63 retired pages no longer enough (>= made >)", FM,
          "or gpu:dcgm_retired_pages:max >= [[ t.retired_pages ]]", "or gpu:dcgm_retired_pages:max > [[ t.retired_pages ]]"),
    Plant("gpu_capacity SLO: input absent for 15m made 30m", "catalog/slos.yaml",
          "    period: 30d\n    input_absent_for: 15m\n", "    period: 30d\n    input_absent_for: 30m\n"),
    Plant("exporter_down alert: for 5m doubled to 10m", FM, EXPORTER_FOR, EXPORTER_FOR.replace("for: 5m", "for: 10m")),
    Plant("memory_remap critical alert: action drain made investigate", FM, REMAP_ACTION,
          REMAP_ACTION.replace("action: drain", "action: investigate")),
    # 2026-12-02: a threshold, a clause, a window, a hold, an inhibition, a link (plants 1-22 held each alert's for and labels)
    Plant("thermal_throttling: the clock-event bits clause dropped (temperature only)", FM, THERMAL_BITS, ""),
    Plant("straggler: the job-peers clause dropped (node peers only)", FM, STRAGGLER_JOB, ""),
    Plant("SLO page tier: long window 1h made 2h", "catalog/slos.yaml",
          "    long: 1h\n    short: 5m\n", "    long: 2h\n    short: 5m\n"),
    Plant("baseline gpu_temp: min_delta 5 C made 8 C", "catalog/baselines.yaml", TEMP_MIN_DELTA,
          TEMP_MIN_DELTA.replace("value: 5", "value: 8")),
    Plant("baseline peers: peer_z 3.5 made 5", FM, PEER_Z, PEER_Z.replace("3.5", "5")),
    Plant("baseline_deviation alert: for 15m doubled to 30m", FM, BASELINE_FOR, BASELINE_FOR.replace("15m", "30m")),
    Plant("thermal_throttling alert: for 2m doubled to 4m", FM, THERMAL_FOR, THERMAL_FOR.replace("2m", "4m")),
    Plant("Alertmanager: a cover's inhibition equal on the node, not the GPU", "rulesgen/builders/alertmanager.py",
          COVER_EQUAL, COVER_EQUAL.replace('"gpu"', '"node"')),
    Plant("dashboard_url: the panel one after the alert's", "rulesgen/builders/rules.py", PANEL_ID,
          PANEL_ID.replace("view.index_in_group", "view.index_in_group + 1")),
    Plant("identity alerts: keep_firing_for dropped", "rulesgen/builders/rules.py", KEEP_FIRING,
          "keep_firing_for_seconds=0"),
    # 2026-12-02: rules made more sensitive, each caught only by a quiet claim (a normal scenario) or an earlier firing
    Plant("thermal_throttling: the temperature's median made its 90th percentile", FM, THERMAL_MEDIAN,
          THERMAL_MEDIAN.replace("0.5", "0.9")),
    Plant("telemetry_frozen: the busy guard of the bit-identical reading dropped", FM, FROZEN_BUSY, ""),
    Plant("telemetry_frozen: the 'served 10 minutes ago' guard dropped", FM, FROZEN_SERVED, ""),
    Plant("baselines: the same-load guard dropped (a heavier job reads as a hotter GPU)", "rulesgen/builders/baselines.py",
          "    if usual:\n        lines.append(", "    if False:\n        lines.append("),
    Plant("straggler: clock_ratio 0.8 made 0.95", FM, STRAGGLER_RATIO, STRAGGLER_RATIO.replace("0.8", "0.95")),
    Plant("gpu_idle_allocated: the allocated-pod condition dropped (every idle GPU)", FM, IDLE_POD, ""),
    Plant("power_anomaly: the collapse clause's busy guard dropped", FM, COLLAPSE_BUSY, ""),
    Plant("loss_divergence: ratio 1.2 made 1.05", FM, LOSS_RATIO, LOSS_RATIO.replace("1.2", "1.05")),
    # 2026-12-02 (later): reference data (a bit, a unit's scale, an XID's class), routing, a scope, an off-by-one
    Plant("baselines: the same-load guard dropped from the GPU's own history (the peers keep theirs)",
          "rulesgen/builders/baselines.py", HISTORY_GUARD, ""),
    Plant("clock events: hw_thermal read from bit 0x200, not 0x40", "catalog/metrics.yaml",
          "{value: 64, name: hw_thermal,", "{value: 512, name: hw_thermal,"),
    Plant("Alertmanager: critical alerts routed to the ticket receiver (no page)", "catalog/alertmanager.yaml",
          "  - severity: critical\n    receiver: page\n", "  - severity: critical\n    receiver: ticket\n"),
    Plant("4.9 rename: DCGM_FI_DEV_GPU_UTIL_RATIO not scaled to percent", "catalog/metrics.yaml", UTIL_RATIO,
          UTIL_RATIO.replace("scale: 100", "scale: 1")),
    Plant("XID 48 (double-bit ECC) classed investigate, not reset (no drain)", "catalog/xid.yaml", XID_48,
          XID_48.replace("class: reset", "class: investigate")),
    Plant("repeated XIDs: the 5th episode in a day no longer enough (>= made >)", FM,
          "  >= [[ t.events ]]\n", "  > [[ t.events ]]\n"),
    Plant("application XID alert: xid dropped from by (...)", FM, XID_APP, XID_APP.replace("[[ gpu ]], xid", "[[ gpu ]]")),
    Plant("gpu_lost: a GPU's last report compared with its fleet's newest, not its node's", FM, LOST_SCOPE,
          LOST_SCOPE.replace("[[ node ]]", "[[ fleet ]]")),
    # 2026-12-02 (later): the labels every rule carries, the dashboards' variables, Alertmanager's grouping and scopes
    Plant("every GPU-level rule: modelName dropped from the GPU's labels", SETTINGS,
          'return (self.cluster_label, self.host_label, "gpu", "UUID", "modelName")',
          'return (self.cluster_label, self.host_label, "gpu", "UUID")'),
    Plant("node identity: cluster dropped (two clusters' nodes of one name are one node)", SETTINGS,
          "return (self.cluster_label, self.host_label)\n", "return (self.host_label,)\n"),
    Plant("GPU identity: UUID dropped (a GPU replaced at the same index is the same GPU)", SETTINGS,
          'return (self.cluster_label, self.host_label, "gpu", "UUID")\n', 'return (self.cluster_label, self.host_label, "gpu")\n'),
    Plant("dashboards: a variable's values no longer narrowed by the variables before it", "rulesgen/builders/dashboards/context.py",
          "before = ctx.variables.matchers([k for k in declared if k in carried])", "before = ctx.variables.matchers([])"),
    Plant("Alertmanager: the rulesgen route grouped by cluster and mode, not by node", AM_BUILDER, AM_GROUPING,
          AM_GROUPING.replace("[cluster, host, ", "[cluster, ")),
    Plant("Alertmanager: an SLO page inhibits its tickets in every cluster (equal dropped)", AM_BUILDER,
          '"equal": list(slo.group_by)})', '"equal": []})'),
    Plant("Alertmanager: a lost GPU silences its whole node (the silence's scope ignored)", AM_BUILDER,
          '"equal": list(scope[s.scope])}', '"equal": list(scope["node"])}'),
    # 2026-12-02 (later): what guards the user's input and files, and the slowest SLO tier
    Plant("config: an unknown key accepted silently (a typo is a default)", "rulesgen/load/mapping.py", UNKNOWN_KEY,
          "    def done(self) -> None:\n        pass\n"),
    Plant("render: a file edited by hand since the last render overwritten silently", "rulesgen/artifacts.py",
          '            found.append(f"{rel} (edited since the last render)")\n', "            pass\n"),
    Plant("SLO ticket tier: long window 3d made 1d (the slow burn's window)", "catalog/slos.yaml",
          "    long: 3d\n    short: 6h\n", "    long: 1d\n    short: 6h\n"),
    Plant("SLO ticket tier: short window 6h made 30m", "catalog/slos.yaml",
          "    long: 3d\n    short: 6h\n", "    long: 3d\n    short: 30m\n"),
    Plant("dashboards: series selectors no longer narrowed by the host variable", DASH_CONTEXT,
          'and k in ("cluster", "host")]', 'and k in ("cluster",)]'),
    Plant("dashboards: the GPUs drawn no longer narrowed by the namespace, workload and pod variables", DASH_CONTEXT,
          r'{gpus}\n  and on ({self.gpu_id}) {self.workload_info()}"', '{gpus}"'),
    Plant("runbooks: 'What to do' lists the checks again, not the actions", "rulesgen/templates/runbook.md.j2",
          "## What to do\n\n{% for line in fm.runbook.act %}", "## What to do\n\n{% for line in fm.runbook.check %}"),
    Plant("alerts: the dashboard link no longer selects the alert's node", "rulesgen/builders/rules.py",
          "settings.host_label: settings.host_label, ", ""),
    Plant("engine fit: rules reading ALERTS no longer put in groups of their own (Prometheus 3 runs theirs serially)",
          "rulesgen/builders/engine_fit.py", 'ALERT_SERIES = ("ALERTS", "ALERTS_FOR_STATE")',
          'ALERT_SERIES = ("ALERTS_FOR_STATE",)'),
    Plant("SLO burn alerts: the short window's check dropped (a burn that stopped still pages for the long window)",
          "rulesgen/builders/slos.py", 'f"  and {ratio_record(slo, tier.short)} / {budget} > {factor}\\n)")', 'f")")'),
    # 2026-12-02 (later): found by the by-labels sweep (--sweep by-labels), each passed every test before
    Plant("xid_same_gpu_across_jobs: jobs counted by workload alone (one name in two teams is one job)", FM,
          XID_JOBS, XID_JOBS.replace("[[ ns ]], ", "")),
    Plant("fleet_capacity_degraded: draining GPUs counted without their node (GPU 0 of three nodes is one)", FM,
          DRAINING_GPUS, DRAINING_GPUS.replace("[[ host ]], gpu", "gpu")),
    Plant("xid_same_gpu_across_jobs: the text's job query loses the pod (names no job)", FM,
          XID31_JOB, XID31_JOB.replace(", [[ pod ]])", ")")),
    Plant("baselines: the node peers' statistics without modelName (their joins match nothing)",
          "rulesgen/builders/baselines.py", NODE_PEERS, NODE_PEERS.replace('"modelName", ', "")),
]


AGGREGATION_BY = re.compile(r"\b(?:sum|max|min|count|avg|group|stddev|stdvar|quantile|topk|bottomk|count_values)"
                            r" by \(([^()]*)\)")
MATCHING = re.compile(r"\b(?:on|ignoring|group_left|group_right) \(([^()]*\S[^()]*)\)")
SWEPT = ("catalog/failure_modes.yaml", "catalog/signals.yaml", "catalog/baselines.yaml")


def label_plants(clause: re.Pattern, root: Path = ROOT) -> list[Plant]:
    """One plant per label (or label macro) of each `clause` in the catalog's expressions (not its comments),
    that label dropped. Generated from the catalog as it is, so it grows with it."""
    plants = []
    for rel in SWEPT:
        text = (root / rel).read_text()
        lines = text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            for m in clause.finditer("" if line.lstrip().startswith("#") else line):
                labels = [label.strip() for label in m.group(1).split(",")]
                for k, label in enumerate(labels):
                    changed = line[:m.start(1)] + ", ".join(labels[:k] + labels[k + 1:]) + line[m.end(1):]
                    end = i + 1  # the line and as many after it as make the text to replace unique
                    while text.count("".join(lines[i:end])) > 1 and end < len(lines):
                        end += 1
                    plants.append(Plant(f"{rel}:{i + 1}: {label} dropped from {m.group(0)}", rel,
                                        "".join(lines[i:end]), changed + "".join(lines[i + 1:end])))
    return plants


def by_label_plants(root: Path = ROOT) -> list[Plant]:
    """The by-labels sweep: each label of each aggregation's by (...) dropped, one at a time."""
    return label_plants(AGGREGATION_BY, root)


def matching_label_plants(root: Path = ROOT) -> list[Plant]:
    """The matching-labels sweep: each label of each on (...), ignoring (...), group_left (...) and
    group_right (...) dropped, one at a time."""
    return label_plants(MATCHING, root)


SWEEPS = {"by-labels": by_label_plants, "matching-labels": matching_label_plants}


def plant(copy: Path, p: Plant) -> bool:
    """Apply p in the copy; False (stale) unless its text is there exactly once."""
    path = copy / p.path
    text = path.read_text() if path.exists() else ""
    if text.count(p.old) != 1:
        return False
    path.write_text(text.replace(p.old, p.new))
    return True


def first_failure(output: str) -> str:
    """The first test pytest reports FAILED or ERROR, else the output's last line."""
    found = re.search(r"^(?:FAILED|ERROR) (\S+)", output, re.M)
    lines = output.strip().splitlines()
    return found.group(1) if found else (lines[-1][:100] if lines else "")


def row(n: int | str, bug: str, result: str, first: str) -> str:
    return f"{n:>2}  {bug:<{max(len(p.bug) for p in PLANTS)}}  {result:<6}  {first}"


def run(repo: Path, plants: dict[int, Plant], command: str, render: bool,
        control: bool = True) -> dict[int, tuple[str, str]]:
    """{number: (caught | missed | stale, first failing test)} of each plant, each planted alone in a copy
    of repo's HEAD; each row is printed as it is known."""
    rows = {}

    def report(n: int, result: str, first: str = "") -> None:
        rows[n] = (result, first)
        print(row(n, plants[n].bug if n else "(control: no bug planted)", result, first), flush=True)

    with tempfile.TemporaryDirectory(prefix="rulesgen-mutants-") as tmp:
        copy = Path(tmp) / "copy"
        subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(copy), "HEAD"], check=True)
        try:
            if (repo / ".tools").exists():
                (copy / ".tools").symlink_to((repo / ".tools").resolve())
            if not (copy / ".venv").exists():  # tests that run .venv/bin/rulesgen (test_backfill) find this one
                (copy / ".venv").symlink_to(Path(sys.prefix).resolve())
            env = {**os.environ, "PYTHONPATH": str(copy),
                   "PATH": f"{copy / '.tools' / 'bin'}:{Path(sys.prefix) / 'bin'}:{os.environ['PATH']}"}
            if control:  # the command must pass on the copy as it is, or no row below means anything
                proc = subprocess.run(command, shell=True, cwd=copy, env=env, capture_output=True, text=True)
                if proc.returncode:
                    report(0, "fails", first_failure(proc.stdout + proc.stderr))
                    return rows
                report(0, "passes")
            for n, p in plants.items():
                subprocess.run(["git", "-C", str(copy), "checkout", "-q", "--", "."], check=True)
                subprocess.run(["git", "-C", str(copy), "clean", "-fdq"], check=True)
                if not plant(copy, p):
                    report(n, "stale", f"{p.path}: the text to replace is not there exactly once")
                    continue
                if render:
                    proc = subprocess.run([sys.executable, "-m", "rulesgen.cli", "render"], cwd=copy, env=env,
                                          capture_output=True, text=True)
                    if proc.returncode:
                        report(n, "caught", "rulesgen render: " + first_failure(proc.stderr))
                        continue
                    # the generated configuration reference too (its test names the command): a changed default
                    # is then caught by what it does, not by a stale page
                    subprocess.run([sys.executable, "scripts/config_doc.py"], cwd=copy, env=env, capture_output=True)
                proc = subprocess.run(command, shell=True, cwd=copy, env=env, capture_output=True, text=True)
                report(n, *(("caught", first_failure(proc.stdout + proc.stderr)) if proc.returncode else ("missed",)))
        finally:
            subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(copy)], check=False)
    return rows


def main(argv=None) -> int:
    venv = Path(sys.prefix)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--command", default=f"make -o '{venv}/.installed' -o tools VENV='{venv}' test PYTEST_ARGS=-x",
                        help="run in the copy after each plant (default: make test, with this venv, stopped at its "
                             "first failure: a caught plant costs minutes, not make test's whole run)")
    parser.add_argument("--only", help="the plants to run, by number (1-based, comma-separated)")
    parser.add_argument("--sweep", choices=sorted(SWEEPS),
                        help="plants generated from the catalog instead of the list above, one label dropped at a time: "
                             "by-labels, of each aggregation's by (...); matching-labels, of each on (...), "
                             "ignoring (...), group_left (...), group_right (...)")
    parser.add_argument("--no-render", dest="render", action="store_false", help="do not re-render the copy")
    parser.add_argument("--list", action="store_true", help="list the plants and exit")
    parser.add_argument("--no-control", dest="control", action="store_false",
                        help="do not first run the command on the copy with no bug planted")
    args = parser.parse_args(argv)
    plants = SWEEPS[args.sweep]() if args.sweep else PLANTS
    numbers = [int(n) for n in args.only.split(",")] if args.only else range(1, len(plants) + 1)
    chosen = {n: plants[n - 1] for n in numbers}
    if args.list:
        print("\n".join(row(n, p.bug, "", p.path) for n, p in chosen.items()))
        return 0
    print(row("#", "bug", "result", "first failing test"))
    rows = run(ROOT, chosen, args.command, args.render, args.control)
    return 1 if any(result in ("stale", "fails") for result, _ in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
