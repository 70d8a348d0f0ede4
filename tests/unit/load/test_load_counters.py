"""A user's dcgm-exporter counters CSV: which fields it enables."""
from rulesgen.load.counters import parse_counters


def test_enabled_fields_are_the_first_column_of_every_line_not_a_comment():
    text = ("# Format\n# DCGM FIELD, Prometheus metric type, help message\n\n"
            "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
            "  DCGM_FI_DEV_POWER_USAGE ,gauge, Power draw (in W).\n"
            "# DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, disabled\n"
            "DCGM_FI_DRIVER_VERSION, label, Driver Version\n")
    assert parse_counters(text) == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DRIVER_VERSION"}


def test_a_file_of_comments_enables_nothing():
    assert parse_counters("# nothing\n\n   \n# DCGM_FI_DEV_GPU_TEMP, gauge, off\n") == set()
