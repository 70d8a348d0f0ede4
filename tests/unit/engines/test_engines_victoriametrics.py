"""rulesgen/engines/victoriametrics.py with the real vmalert (`vmalert -replay.*`): the replay it starts reads
the datasource over the range and step it was given, and a failed replay is an error naming the rule file with
vmalert's log. (The successful replay into a running victoria-metrics is tests/test_backfill.py's.)"""
import pytest

from rulesgen.engines.victoriametrics import VictoriaMetricsError, run_vmalert

START, END = 1_767_225_600, 1_767_229_200  # 2026-01-01T00:00:00Z, one hour later


def test_a_replay_against_an_unreachable_datasource_fails_naming_the_file_and_the_query(vmalert, tmp_path):
    rules = tmp_path / "day-1.yaml"
    rules.write_text("groups:\n- name: g\n  rules:\n  - record: a:b:c\n    expr: vector(1)\n")
    with pytest.raises(VictoriaMetricsError) as info:
        run_vmalert("http://127.0.0.1:1", rules, START, END, 3600, vmalert=vmalert, timeout=120)
    first, *log = str(info.value).splitlines()
    assert first.startswith("vmalert replay of day-1.yaml failed (exit ")
    query = next(line for line in log if "query_range" in line)
    assert "http://127.0.0.1:1/api/v1/query_range" in query and 'rule "a:b:c"' in query
    assert "start=2026-01-01T00%3A00%3A00Z" in query and "end=2026-01-01T01%3A00%3A00Z" in query
    assert "step=3600s" in query
