"""rulesgen/catalog/health.py: dcgm_health.yaml's codes and classes, and the covers they give failure modes."""
from dataclasses import replace

import pytest

from conftest import MINIMAL_CATALOG
from rulesgen.catalog.failure_modes import read_failure_modes
from rulesgen.catalog.health import read_health, with_health_covers
from rulesgen.errors import Collector
from unit_yaml import printed, written

HEALTH = """\
failure_mode: dcgm_health
label: health_error_code
watches:
  - {name: MEM, meaning: memory}
codes:
  - code: DCGM_FR_VOLATILE_DBE_DETECTED
    number: 2
    dcgm_severity: DCGM_ERROR_RESET
    category: DCGM_FR_EC_HARDWARE_MEMORY
    class: drain
    failure_modes: [ecc_uncorrectable]
    source: table
  - code: DCGM_FR_CLOCKS_EVENT_POWER
    aliases: [DCGM_FR_CLOCK_THROTTLE_POWER]
    number: 3
    dcgm_severity: DCGM_ERROR_MONITOR
    category: DCGM_FR_EC_PERF_THRESHOLD
    class: normal
    source: table
"""


@pytest.fixture
def modes(tmp_path):
    """Three failure modes (the minimal catalog's one, copied under the ids the table names)."""
    _, doc = written(tmp_path, "failure_modes.yaml", MINIMAL_CATALOG["failure_modes.yaml"])
    errors = Collector()
    (hot,) = read_failure_modes(doc, errors, {"DCGM_FI_DEV_GPU_TEMP"}, set())
    assert errors.items == []
    return [hot, replace(hot, id="ecc_uncorrectable"), replace(hot, id="dcgm_health")]


def test_codes_with_their_class_aliases_and_lines(tmp_path):
    path, doc = written(tmp_path, "dcgm_health.yaml", HEALTH)
    errors = Collector()
    table = read_health(doc, errors)
    assert errors.items == []
    assert (table.failure_mode, table.label, table.watches) == ("dcgm_health", "health_error_code", (("MEM", "memory"),))
    assert [(c.code, c.number, c.health_class, c.names, c.failure_modes) for c in table.codes] == [
        ("DCGM_FR_VOLATILE_DBE_DETECTED", 2, "drain", ("DCGM_FR_VOLATILE_DBE_DETECTED",), ("ecc_uncorrectable",)),
        ("DCGM_FR_CLOCKS_EVENT_POWER", 3, "normal", ("DCGM_FR_CLOCKS_EVENT_POWER", "DCGM_FR_CLOCK_THROTTLE_POWER"), ())]
    # a code's place is its failure_modes line when it has one, else the item
    assert [c.where.line for c in table.codes] == [11, 13]


def test_an_alias_that_repeats_a_code_a_bad_class_and_a_bad_code_name_their_lines(tmp_path):
    text = (HEALTH.replace("[DCGM_FR_CLOCK_THROTTLE_POWER]", "[DCGM_FR_VOLATILE_DBE_DETECTED]")
            .replace("class: drain", "class: drian").replace("code: DCGM_FR_CLOCKS_EVENT_POWER", "code: dcgm_fr_power"))
    path, doc = written(tmp_path, "dcgm_health.yaml", text)
    errors = Collector()
    read_health(doc, errors)
    assert printed(errors) == [
        f"{path}:10:5: error[bad-value]: health code.class must be one of drain, investigate, normal, got 'drian' "
        "(did you mean 'drain'?)",
        f"{path}:13:5: error[bad-value]: health code.code: 'dcgm_fr_power' does not match DCGM_FR_[A-Z0-9_]+",
        f"{path}:13:5: error[duplicate-id]: DCGM health code DCGM_FR_VOLATILE_DBE_DETECTED already defined on line 6",
    ]


def test_each_code_gives_its_failure_modes_a_cover_of_the_verdict(tmp_path, modes):
    _, doc = written(tmp_path, "dcgm_health.yaml", HEALTH)
    errors = Collector()
    covered = {m.id: m for m in with_health_covers(modes, read_health(doc, errors), errors)}
    assert errors.items == []
    assert covered["ecc_uncorrectable"].covers == (("dcgm_health", "DCGM_FR_VOLATILE_DBE_DETECTED"),)
    assert covered["hot_gpu"].covers == ()
    assert covered["dcgm_health"].cover_label == "health_error_code"


def test_an_unknown_failure_mode_of_a_code_is_an_error_at_its_line(tmp_path, modes):
    path, doc = written(tmp_path, "dcgm_health.yaml", HEALTH.replace("[ecc_uncorrectable]", "[ecc_uncorectable]"))
    errors = Collector()
    covered = with_health_covers(modes, read_health(doc, errors), errors)
    assert all(m.covers == () for m in covered)
    assert printed(errors) == [
        f"{path}:11:5: error[unknown-failure-mode]: dcgm_health.yaml: code DCGM_FR_VOLATILE_DBE_DETECTED names "
        "failure mode 'ecc_uncorectable': not another failure mode (did you mean 'ecc_uncorrectable'?)"]
