"""rulesgen: Prometheus/VictoriaMetrics rules and Grafana dashboards for NVIDIA GPU failure modes."""
