"""The job_success SLO's reading of the Kubeflow training operator's counters (builders/slos.py): each counter's
increase per evaluation, read at the configured interval, summed per namespace beside the Kubernetes Jobs."""
from pathlib import Path

from rulesgen.builders.slos import build_slo_file
from rulesgen.catalog import bundled_catalog_dir, load_catalog
from rulesgen.load.settings import load_settings
from rulesgen.model import training_operator
from rulesgen.promql.tree import names_read


def _rules(tmp_path: Path, config: str) -> dict[str, str]:
    path = tmp_path / "rulesgen.yaml"
    path.write_text(config)
    built = build_slo_file(load_catalog(bundled_catalog_dir()), load_settings(path))
    return {r.record: r.expr for g in built.groups for r in g.rules if r.record}


def test_the_operators_jobs_count_beside_the_kubernetes_jobs(tmp_path):
    rules = _rules(tmp_path, "evaluation_interval: 30s\nslos:\n  job_success: {}\n")
    finished = rules["namespace:training_operator_jobs_finished:count"]
    assert set(training_operator.SERIES) <= set(names_read(finished))
    assert f"{training_operator.SUCCEEDED} offset 30s" in finished and f"{training_operator.FAILED} offset 30s" in finished
    assert f'"namespace", "$1", "{training_operator.NAMESPACE}"' in finished  # the operator's label, renamed
    for record in ("slo:job_success_total:count", "slo:job_success_bad:count", "slo:job_success_bad_by_namespace:count"):
        assert {"job:slo_job_success:finished", "namespace:training_operator_jobs_finished:count"} <= set(names_read(rules[record]))
