"""group-count: more groups, over all the files given, than Grafana Mimir accepts per tenant by
default; reported once, at the first group over the limit."""
from ..builders.engine_fit import MIMIR_MAX_GROUPS_PER_TENANT
from .base import GROUP, Check, Group


def run(group: Group):
    if group.n == MIMIR_MAX_GROUPS_PER_TENANT + 1:
        yield group.hit(f"group {group.n} of {group.total}: Grafana Mimir accepts {MIMIR_MAX_GROUPS_PER_TENANT} "
                        "groups per tenant by default (-ruler.max-rule-groups-per-tenant)")


CHECK = Check("group-count", "warning", False, "more groups than Mimir's -ruler.max-rule-groups-per-tenant default (70)",
              GROUP, run)
