"""cli/slos.py: an SLO the config does not name is explained from its catalog defaults, with no rules."""
from pathlib import Path

from rulesgen.artifacts import plan
from rulesgen.catalog import bundled_catalog_dir
from rulesgen.cli.slos import slo_facts


def test_an_slo_not_named_is_explained_from_the_catalog_defaults(tmp_path: Path):
    config = tmp_path / "rulesgen.yaml"
    config.write_text("urls: {}\n")
    facts = slo_facts(plan(bundled_catalog_dir(), config, None), "job_success")
    assert not facts["rendered"] and facts["records"] == [] and facts["files"] == []
    assert facts["objective"] == 99 and facts["counts"] == {"bad": "slo:job_success_bad:count",
                                                           "total": "slo:job_success_total:count"}
