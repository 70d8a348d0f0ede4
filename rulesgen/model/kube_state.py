"""The kube-state-metrics series the audience dashboards read (issue 37 item 1): pending GPU pods, the
Kubernetes Jobs that ran on GPUs, whether they completed or failed. Data only.

kube-state-metrics (v2) exports them as its docs describe (docs/metrics/workload/pod-metrics.md and
job-metrics.md): a container's requests as `kube_pod_container_resource_requests` with the extended resource
`nvidia.com/gpu` sanitised to `nvidia_com_gpu`, a pod's phase as `kube_pod_status_phase{phase=...}` (1 for
the current phase), its owner as `kube_pod_owner{owner_kind, owner_name}`, a Job's conditions as
`kube_job_complete` / `kube_job_failed` `{condition="true"}` and its failed pods as `kube_job_status_failed`,
all labelled with the object's `namespace` (kube-state-metrics is scraped with honorLabels, so its
`namespace` is the object's, whatever rulesgen.yaml calls dcgm-exporter's pod namespace). Only the
job_success SLO's rules read them (opt-in, docs/slos.md): where kube-state-metrics is not scraped the panels
stay empty and say so."""
from __future__ import annotations

NAMESPACE = "namespace"  # the label kube-state-metrics names an object's namespace with
GPU_RESOURCE = "nvidia_com_gpu"
REQUESTS = "kube_pod_container_resource_requests"
POD_PHASE = "kube_pod_status_phase"
POD_OWNER = "kube_pod_owner"
JOB_COMPLETE = "kube_job_complete"
JOB_FAILED = "kube_job_failed"
JOB_FAILED_PODS = "kube_job_status_failed"
JOB_ACTIVE = "kube_job_status_active"  # the Job's running pods: the job_success SLO sees a Job run, then finish
JOB_LABEL = "job_name"  # the label kube-state-metrics names a Job with (kube_pod_owner's owner_name for its pods)
POD_CREATED = "kube_pod_created"  # unix time the pod was created: how long a pending pod has waited
SERIES = (REQUESTS, POD_PHASE, POD_OWNER, JOB_COMPLETE, JOB_FAILED, JOB_FAILED_PODS, JOB_ACTIVE, POD_CREATED)
