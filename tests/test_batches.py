"""tests/batches.py: scenario tests replayed several to a run still judge each scenario alone."""
from pathlib import Path

import pytest
import yaml

import batches
from rulesgen.builders.promtool_tests import scenario_test
from rulesgen.load.scenarios import load_scenario

RULES = """\
groups:
  - name: g
    rules:
      - alert: Hot
        expr: max by ({by}) (temp) > 90
        labels: {{failure_mode: hot}}
"""


def scenario(tmp_path: Path, name: str, hot_gpu: str, expected_gpu: str | None, cluster: str = "") -> dict:
    """A 30-minute scenario of two GPUs on node n1, `hot_gpu` above 90 from the start (none: "")."""
    extra = f', cluster="{cluster}"' if cluster else ""
    series = "\n".join(f"  - series: 'temp{{Hostname=\"n1\", gpu=\"{g}\"{extra}}}'\n    values: '{95 if g == hot_gpu else 60}x30'"
                       for g in ("0", "1"))
    expect = (f"expect:\n  - failure_mode: hot\n    labels: {{Hostname: n1, gpu: \"{expected_gpu}\"}}\n"
              "    after: 0s\n    within: 5m\n") if expected_gpu else ""
    path = tmp_path / f"{name}.scenario.yaml"
    path.write_text(f"name: {name}\ndescription: d\ninterval: 1m\nduration: 30m\nseries:\n{series}\n{expect}")
    return scenario_test(load_scenario(path, ["hot"]), ["rules.yaml"], ["g"])


def write(tmp_path: Path, docs: dict[str, dict], by: str = "cluster, Hostname, gpu") -> list[Path]:
    (tmp_path / "rules.yaml").write_text(RULES.format(by=by))
    for name, doc in docs.items():
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(doc))
    return [tmp_path / f"{name}.yaml" for name in docs]


def test_merged_tags_every_series_and_scopes_every_alerts_read(tmp_path):
    one = scenario(tmp_path, "one", "0", "0", cluster="c1")
    doc = batches.merged([one, scenario(tmp_path, "two", "", None)])
    (test,) = doc["tests"]
    assert [s["series"] for s in test["input_series"]][::2] == [
        'temp{Hostname="n1", gpu="0", cluster="c1~rulesgen-batch-0"}', 'temp{Hostname="n1", gpu="0", cluster="~rulesgen-batch-1"}']
    exprs = [q["expr"] for q in test["promql_expr_test"]]
    assert all('cluster=~".*~rulesgen-batch-0"' in e for e in exprs[:2]) and 'ALERTS{cluster=~".*~rulesgen-batch-1"' in exprs[2]
    assert exprs[-1] == 'ALERTS{cluster!~".*~rulesgen-batch-[0-9]+"}' and test["promql_expr_test"][-1]["eval_time"] == "1800s"


def test_plan_keeps_apart_what_cannot_share_a_run_and_cuts_at_the_limits(tmp_path, monkeypatch):
    docs = {f"s{i}": scenario(tmp_path, f"s{i}", "0", "0") for i in range(5)}
    docs["other"] = {**scenario(tmp_path, "other", "0", "0"), "evaluation_interval": "30s"}
    monkeypatch.setattr(batches, "MAX_SCENARIOS", 2)
    plan = [[p.stem for p in b] for b in batches.plan(write(tmp_path, docs))]
    assert sorted(map(sorted, plan)) == [["other"], ["s0", "s1"], ["s2", "s3"], ["s4"]]


@pytest.mark.engines
@pytest.mark.promtool
def test_a_batch_judges_each_scenario_alone(tmp_path, promtool, monkeypatch):
    """Beside a scenario whose GPU 0 runs hot, a quiet one on the same node and GPU names passes (its
    checks read its own alerts); a wrong expectation fails its own scenario only (the batch replays file by
    file, and its temp folder goes: the member's own run says why); a rule that drops the cluster label fails
    the batch on the guard, and a batch failing where every member passes alone keeps what it said."""
    import subprocess
    import tempfile
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))

    def run(path):
        proc = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True, text=True, cwd=tmp_path)
        return proc.returncode, proc.stdout + proc.stderr
    docs = {"hot": scenario(tmp_path, "hot", "0", "0"), "quiet": scenario(tmp_path, "quiet", "", None),
            "wrong": scenario(tmp_path, "wrong", "0", "1", cluster="c1")}
    paths = write(tmp_path, docs)
    assert run(tmp_path / "quiet.yaml")[0] == 0 and run(tmp_path / "wrong.yaml")[0] == 1
    (tmp_path / "pair.yaml").write_text(yaml.safe_dump(batches.merged([docs["hot"], docs["quiet"]])))
    assert run(tmp_path / "pair.yaml")[0] == 0
    (results_of,) = batches.jobs(paths, run).values()
    results = results_of()
    assert {k: rc for k, (rc, _) in results.items()} == {"hot": 0, "quiet": 0, "wrong": 1}
    assert 'cluster="c1"' in results["wrong"][1] and batches.TAG not in results["wrong"][1]  # its own run's output
    assert list(temp.iterdir()) == []
    write(tmp_path, {}, by="Hostname, gpu")
    rc, out = run(tmp_path / "pair.yaml")
    assert rc == 1 and "~rulesgen-batch-[0-9]+" in out
    (results_of,) = batches.jobs([tmp_path / "hot.yaml", tmp_path / "quiet.yaml"], run).values()
    assert {k: rc for k, (rc, _) in results_of().items()} == {"hot": 0, "quiet": 0}
    (kept,) = temp.glob("rulesgen-batch-*/*.failed")
    assert "~rulesgen-batch-[0-9]+" in kept.read_text()


def test_groups_cut_the_scenarios_before_any_render_as_plan_cuts_their_files():
    """conftest's xdist groups: every scenario once, a group's scenarios on the same clock, at most
    MAX_SCENARIOS and, past one, MAX_SAMPLES of estimated input."""
    names = sorted(p.stem for p in batches.SCENARIO_DIR.glob("*.yaml"))
    groups = batches.groups(names)
    assert sorted(n for g in groups for n in g) == names and len(groups) < len(names) / 3
    for g in groups:
        assert len({batches._header(n)[0] for n in g}) == 1, g
        assert len(g) <= batches.MAX_SCENARIOS
        assert len(g) == 1 or sum(batches._header(n)[1][1] for n in g) <= batches.MAX_SAMPLES, g
    assert batches.scenario_file("straggler@exporter-4.9") == batches.SCENARIO_DIR / "straggler.yaml"
    interval, (duration, samples) = batches._header("straggler")
    assert interval == (30, 60) and duration == 6 * 3600 and samples > 0


def test_filled_takes_only_what_rides_in_the_chosen_batches():
    """A sample's batches filled up to MAX_SCENARIOS with scenarios of their clock no longer than the batch:
    no batch and no evaluation step more; a scenario of another clock, or longer, stays out."""
    names = sorted(p.stem for p in batches.SCENARIO_DIR.glob("*.yaml"))
    chosen = ["exporter-down"]  # 6 hours at 30 s / 30 s
    same = [n for n in names if batches._header(n)[0] == batches._header(chosen[0])[0]]
    filled = batches.filled(chosen, names)
    assert set(chosen) < set(filled) <= set(same) and len(batches.groups(filled)) == 1
    assert all(batches._header(n)[1][0] <= batches._header(chosen[0])[1][0] for n in filled)
    longest = max(names, key=lambda n: batches._header(n)[1][0])
    assert longest not in batches.filled(["straggler"], names)
