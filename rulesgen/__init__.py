"""rulesgen: Prometheus/VictoriaMetrics rules and Grafana dashboards for NVIDIA GPU failure modes."""
__version__ = "0.1.0"  # the release; pyproject.toml carries the same (tests/test_cli.py checks)
