"""rulesgen/checks/dashboard_view.py: a dashboard as the dashboard checks read it (panels of collapsed rows
too, where a panel or a variable is in the text), Grafana's variables made parseable, and the series a query may
read (the catalog's rendered records and metrics)."""
import json

from rulesgen.checks.dashboard_view import Board, Dashboard, DashboardOptions, bundled_series, load_dashboard, parsed


def test_panels_of_collapsed_rows_are_read_and_found_in_the_text():
    data = {"panels": [{"id": 1, "type": "row", "title": "R", "panels": [{"id": 101, "type": "timeseries", "title": "T"}]}],
            "templating": {"list": [{"name": "gpu", "type": "query"}]}}
    text = json.dumps(data, sort_keys=True, indent=2)
    d = Dashboard("d.json", text, data, Board([], DashboardOptions()))
    d.board.dashboards.append(d)
    assert [p["id"] for p in d.panels] == [1, 101] and [p["id"] for p in d.data_panels] == [101]
    hit = d.hit("x", d.data_panels[0])
    assert hit.message == "panel 101 'T': x" and text.splitlines()[hit.line - 1].strip().startswith('"id": 101')
    assert d.variable_hit(d.variables[0], "y").message == "variable gpu: y"
    assert d.board.by_uid == {} and d.variable_names == ["gpu"]


def test_grafana_variables_become_values_and_a_broken_file_says_why():
    assert parsed("rate(x[$__rate_interval]) * $__range_s") == "rate(x[1h]) * 3600"
    assert load_dashboard("d.json", "[]").startswith("is not a JSON object")
    assert load_dashboard("d.json", "{").startswith("does not parse as JSON")


def test_the_bundled_catalog_names_its_records_metrics_and_counters():
    series = bundled_series()
    assert {"gpu:dcgm_gpu_temp:max", "DCGM_FI_DEV_GPU_TEMP", "ALERTS", "ALERTS_FOR_STATE", "up"} <= series.known
    assert "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" in series.counters and "DCGM_FI_DEV_GPU_TEMP" not in series.counters
