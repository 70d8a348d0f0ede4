"""group-count: more groups, over all the files given, than Grafana Mimir accepts per tenant by
default; reported once, at the first group over the limit. The files a header declares for the shards
(`# Tier shard (`) are not counted: each shard's own Prometheus or vmalert loads them, never a Mimir ruler
(docs/sharding.md "Files")."""
from ..builders.engine_fit import MIMIR_MAX_GROUPS_PER_TENANT
from .base import FILES, Check, Files, Hit
from ..load.yamlsource import where_of
from .tier_local import declared_tier


def run(files: Files):
    counted = [(path, g) for path, g in files.groups if declared_tier(path) != "shard"]
    if len(counted) > MIMIR_MAX_GROUPS_PER_TENANT:
        path, group = counted[MIMIR_MAX_GROUPS_PER_TENANT]
        where = where_of(group, "name")
        yield Hit(str(path), where.line, where.col,
                  f"{group.get('name', '?')}: group {MIMIR_MAX_GROUPS_PER_TENANT + 1} of {len(counted)}: Grafana Mimir "
                  f"accepts {MIMIR_MAX_GROUPS_PER_TENANT} groups per tenant by default (-ruler.max-rule-groups-per-tenant)")


CHECK = Check("group-count", "warning", False, "more groups than Mimir's -ruler.max-rule-groups-per-tenant default (70)",
              FILES, run)
