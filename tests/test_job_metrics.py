"""The training jobs' own metrics (issue 14, part 3): an optional input with a documented contract.

Configurable names and labels (errors name rulesgen.yaml:line), nothing rendered or firing without
it, `rulesgen list` naming the failure modes inactive for lack of input, scenario files that may use
the configured names. The scenarios themselves run in test_scenarios.py / test_victoriametrics.py.
"""
import re
from pathlib import Path

import yaml

from conftest import ROOT, run_cli
from treeasserts import joins, reads
from rulesgen.artifacts import load_inputs, plan
from rulesgen.builders.rules import build_rules, job_signal_records
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.errors import RulesgenError
from rulesgen.load.jobmetrics import exposition_names
from rulesgen.load.settings import load_settings
from rulesgen.promql import tree as promql_tree

JOB_MODES = {"ghost_loss", "loss_divergence", "loss_plateau", "loss_not_finite", "step_time_straggler"}


def _rules(config: Path | None):
    catalog, settings = load_inputs(bundled_catalog_dir(), config)
    return catalog, build_rules(catalog, settings)


def test_the_catalog_marks_the_job_modes_and_their_inputs():
    catalog, rules = _rules(None)
    modes = {fm.id: fm for fm in catalog.failure_modes if fm.job_metrics}
    assert set(modes) == JOB_MODES and all(fm.group == "jobs" for fm in modes.values())
    assert modes["step_time_straggler"].job_metrics == ("step_duration",)
    assert {r.failure_mode for r in rules.rules if r.alert} >= JOB_MODES
    text = "\n".join(r.expr for r in rules.rules)
    assert "training_loss" in text and "training_step_duration_seconds_sum" in text


def test_configured_names_and_labels_reach_the_rules(tmp_path):
    config = tmp_path / "rulesgen.yaml"
    config.write_text("job_metrics:\n  loss: llm_train_loss\n  step_duration: llm_step_seconds\n"
                      "  selector: 'job=\"trainer\"'\n  labels: {pod: exported_pod, rank: global_rank}\n")
    _, rules = _rules(config)
    text = "\n".join(r.expr for r in rules.rules)
    assert 'llm_train_loss{job="trainer"}' in text and 'rate(llm_step_seconds_sum{job="trainer"}[5m])' in text
    assert 'label_replace(llm_train_loss{job="trainer"}, "pod", "$1", "exported_pod", "(.+)")' in text
    assert '"rank", "$1", "global_rank", "(.+)"' in text
    assert not re.search(r"(?<![\w:])training_loss(?![\w:])", text)  # (recording rules keep their names)


def test_job_metrics_errors_name_the_line(tmp_path):
    config = tmp_path / "rulesgen.yaml"
    config.write_text("job_metrics:\n  los: x\n  step_duration: 'step time'\n  selector: job=training\n"
                      "  labels: {rank: 1rank}\n  enabled: maybe\n")
    try:
        load_settings(config)
    except RulesgenError as exc:
        text = str(exc)
    else:
        raise AssertionError("bad job_metrics accepted")
    assert "rulesgen.yaml:2:3: error[unknown-key]: job_metrics: unknown key 'los' (did you mean 'loss'?)" in text
    assert "rulesgen.yaml:3:3: error[bad-value]: job_metrics.step_duration" in text
    assert "rulesgen.yaml:4:3: error[bad-selector]" in text
    assert "rulesgen.yaml:5:12: error[bad-value]: job_metrics.labels.rank" in text
    assert "rulesgen.yaml:6:3: error[bad-type]: job_metrics.enabled must be true or false" in text


def test_disabled_job_metrics_render_nothing_and_list_says_why(tmp_path):
    config = tmp_path / "rulesgen.yaml"
    config.write_text("job_metrics: {enabled: false}\n")
    catalog, rules = _rules(config)
    assert dict(rules.inactive).keys() >= JOB_MODES
    names = {r.record or r.alert for r in rules.rules}
    rendered = {r.record: r.expr for r in _rules(None)[1].rules if r.record}
    assert not names & job_signal_records(catalog, rendered) and not any("Loss" in n or "StepTime" in n for n in names)
    assert all(f.path != "alerts/prometheus/jobs.yaml" for f in rules.files)
    result = run_cli("list", "--config", str(config))
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.strip().startswith("ghost_loss"))
    assert "inactive: needs the training jobs' own metrics (training_loss; job_metrics.enabled: false" in line


def test_list_names_the_modes_a_job_leaves_without_input(tmp_path):
    exposition = tmp_path / "metrics.txt"
    exposition.write_text("# HELP training_step_duration_seconds Last step\n# TYPE training_step_duration_seconds "
                          "histogram\ntraining_step_duration_seconds_sum{rank=\"0\"} 12.5\n"
                          "training_step_duration_seconds_count{rank=\"0\"} 10\nprocess_cpu_seconds_total 3\n")
    assert "training_step_duration_seconds_sum" in exposition_names(exposition.read_text())
    result = run_cli("list", "--job-metrics", str(exposition))
    assert result.returncode == 0, result.stderr
    lines = {x.split()[0]: x for x in result.stdout.splitlines() if x.startswith("  ")}
    assert "inactive: no input" in lines["loss_plateau"] and "exports no training_loss" in lines["loss_plateau"]
    assert "active" in lines["step_time_straggler"] and "inactive" not in lines["step_time_straggler"]
    assert "4 job failure mode(s) inactive for lack of input: ghost_loss, loss_divergence, loss_plateau, loss_not_finite" \
        in result.stdout
    plain = run_cli("list").stdout
    assert "[needs job metrics: training_loss; silent for jobs without them]" in plain


def test_plain_loss_alerts_yield_to_the_ghost_loss_only_while_it_renders(tmp_path):
    _, rules = _rules(None)
    plateau = next(r for r in rules.rules if r.failure_mode == "loss_plateau")
    assert any(j.op == "unless" and j.on == ("cluster", "namespace", "workload") and reads(j.rhs, "gpu:ghost_loss:minutes")
               for j in joins(plateau.expr))
    config = tmp_path / "rulesgen.yaml"
    config.write_text("failure_modes:\n  ghost_loss: {enabled: false}\n")
    _, rules = _rules(config)
    plateau = next(r for r in rules.rules if r.failure_mode == "loss_plateau")
    assert not any("ghost_loss" in name for name in promql_tree.names_read(plateau.expr))


def test_job_alerts_name_the_job_and_link_to_the_jobs_dashboard():
    p = plan(bundled_catalog_dir(), ROOT / "rulesgen.yaml", None)
    for r in p.rules.rules:
        if r.failure_mode in JOB_MODES and r.alert:
            ann = dict(r.annotations)
            assert "/d/" in ann["dashboard_url"] and "gpu-jobs?viewPanel=" in ann["dashboard_url"], r.alert
            assert "workload" in ann["summary"] + ann["description"] or "{{ $labels.pod }}" in ann["summary"], r.alert
    ghost = next(r for r in p.rules.rules if r.failure_mode == "ghost_loss")
    ann = dict(ghost.annotations)
    assert "{{ $labels.hardware_failure_mode }}" in ann["summary"] and "{{ $value | humanize }} minutes" in ann["description"]
    straggler = next(r for r in p.rules.rules if r.failure_mode == "step_time_straggler")
    assert any(j.group_left and "rank" in j.group_left for j in joins(straggler.expr))
    assert "{{ $labels.rank }}" in dict(straggler.annotations)["summary"]


def _scenario(tmp_path, metric: str) -> Path:
    path = tmp_path / "probe.yaml"
    path.write_text(yaml.safe_dump({
        "name": "probe", "description": "a job series", "interval": "1m", "duration": "10m",
        "series": [{"series": f'{metric}{{namespace="ml", pod="train-worker-0", rank="0"}}', "values": "1x10"},
                   {"series": 'up{job="dcgm-exporter", instance="10.0.0.1:9400"}', "values": "1x10"}],
        "expect": []}))
    return path


def test_scenarios_accept_the_configured_job_metrics_and_flag_a_near_miss(tmp_path):
    from rulesgen.load.scenarios import load_scenario
    names = load_settings(None).job_metrics.names
    load_scenario(_scenario(tmp_path, "training_loss"), [], set(), names)
    load_scenario(_scenario(tmp_path, "process_cpu_seconds_total"), [], set(), names)
    try:
        load_scenario(_scenario(tmp_path, "training_los"), [], set(), names)
    except RulesgenError as exc:
        assert "error[unknown-metric]: series names 'training_los', not a job metric the config reads" in str(exc)
        assert "(did you mean 'training_loss'?)" in str(exc)
    else:
        raise AssertionError("a misspelt job metric was accepted")
    config = tmp_path / "rulesgen.yaml"
    config.write_text("job_metrics: {loss: my_loss}\n")
    custom = load_settings(config).job_metrics.names
    load_scenario(_scenario(tmp_path, "my_loss"), [], set(), custom)


def test_explain_covers_every_job_mode(tmp_path):
    """No scenarios: their tests are not what this checks."""
    for fm_id in sorted(JOB_MODES):
        result = run_cli("explain", fm_id, "--scenarios", str(tmp_path))
        assert result.returncode == 0, result.stderr
        assert "THRESHOLDS" in result.stdout and "source:" in result.stdout and "RUNBOOK" in result.stdout
