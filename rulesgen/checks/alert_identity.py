"""alert-identity: an alert of a hardware group (health, baselines, fleet) carries only its subject's
identity (README "Alert identity"): which labels its result can carry is read from its syntax tree
and the labels of the records it reads (rulesgen/promql/labels.py)."""
from ..builders import engine_fit
from ..load.yamlsource import where_of
from ..model import conventions
from ..model.catalog import IDENTITY_GROUPS
from .base import RULE, WORKLOAD_LABELS, Check, Rule

# Labels that change while a hardware fault persists (a pod deleted or rescheduled, an exporter restarted
# elsewhere, a driver upgraded, exporter 4.9 renaming the driver label): an alert about a GPU, node, link
# or cluster that can carry one resolves and fires again under new labels (README "Alert identity").
NOT_IDENTITY = WORKLOAD_LABELS + ("workload", "instance", "job", "DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION")
# ... except the exporter target itself: it is the subject of these while its series name no host.
TARGET_SUBJECT_MODES = {"exporter_down": ("instance",), "telemetry_blind_spot": ("instance",)}
IDENTITY_GROUP_NAMES = tuple(conventions.alert_group(g) for g in IDENTITY_GROUPS) + (conventions.BASELINE_GROUP,)


def run(rule: Rule):
    if "alert" not in rule.node or rule.tree is None:
        return
    if engine_fit.base_group(str(rule.group.get("name", "")), IDENTITY_GROUP_NAMES) is None:
        return
    labels = rule.node.get("labels") or {}
    carried = rule.carried
    allowed = TARGET_SUBJECT_MODES.get(str(labels.get("failure_mode", "")), ())
    bad = [k for k in NOT_IDENTITY if k not in allowed and k not in labels and k in carried.known]
    if bad or carried.open:
        what = (f"can carry {', '.join(bad)}" if bad else "") + (
            ("; " if bad else "") + "passes a raw series through unaggregated (any of its labels)" if carried.open else "")
        yield rule.hit(f"a hardware alert {what}: a pod deleted or rescheduled, a driver upgrade or an exporter "
                       "restart would resolve it and open a second one; keep the subject's identity only (aggregate "
                       "by it) and name the job in the annotations", where_of(rule.node, "alert"))


CHECK = Check("alert-identity", "error", True,
              "a hardware alert carries only its subject's identity labels (README \"Alert identity\")", RULE, run)
