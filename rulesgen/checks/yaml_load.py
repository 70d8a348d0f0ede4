"""The file does not load: reported by the YAML loader (rulesgen/load/yamlsource.py), the same diagnostics as a
catalog's. One family: the loader finds all three in one pass, so they share all their code."""
from .base import Check

CHECKS = (
    Check("yaml-syntax", "error", False, "the file does not parse as YAML"),
    Check("duplicate-key", "error", False, "a mapping repeats a key"),
    Check("bad-key", "error", False, "a mapping key is not a string"),
)
