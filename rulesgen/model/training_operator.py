"""The Kubeflow training operator's job counters (its /metrics, pkg/common/metrics.go): every PyTorchJob, TFJob,
MPIJob ... that succeeded or failed, counted per namespace and framework. The operator creates the jobs' pods
itself, not Kubernetes Jobs, so kube-state-metrics' Job series do not see them; the job_success SLO counts these
beside them (docs/slos.md). Data only."""
from __future__ import annotations

SUCCEEDED = "training_operator_jobs_successful_total"
FAILED = "training_operator_jobs_failed_total"
NAMESPACE = "job_namespace"  # the label the operator names a job's namespace with
ANY = "training_operator_jobs_.+_total"  # any of its job counters: the operator was scraped
SERIES = (SUCCEEDED, FAILED)
