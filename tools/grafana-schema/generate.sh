#!/usr/bin/env bash
# Regenerates tests/schemas/grafana-dashboard.schema.json (JSON Schema draft-07) from the
# TypeScript dashboard types published in the @grafana/schema npm package.
#
# Usage (from the repo root or anywhere): bash tools/grafana-schema/generate.sh
# Needs: node >= 20 with npm, python3 (stdlib only). Network: the npm registry only.
# See README.md beside this file for what is generated and why it is post-processed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="$HERE/../../tests/schemas/grafana-dashboard.schema.json"
# The raw, CUE-generated dashboard model (schemaVersion-39-style JSON, "v0/v1" dashboards).
SRC_REL="node_modules/@grafana/schema/dist/types/raw/dashboard/x/types.gen.d.ts"
ROOT_TYPE="Dashboard"

cd "$HERE"

if [[ -f package-lock.json ]]; then
  npm ci --no-audit --no-fund --ignore-scripts
else
  npm install --no-audit --no-fund --ignore-scripts
fi

if [[ ! -f "$SRC_REL" ]]; then
  echo "generate.sh: $SRC_REL not found; the @grafana/schema layout changed, update SRC_REL" >&2
  exit 1
fi

GRAFANA_SCHEMA_VERSION="$(node -p 'require("./node_modules/@grafana/schema/package.json").version')"
GENERATOR_VERSION="$(node -p 'require("./node_modules/ts-json-schema-generator/package.json").version')"

TMP="$(mktemp)"
trap 'rm -f "$TMP"' EXIT

./node_modules/.bin/ts-json-schema-generator \
  --path "$SRC_REL" \
  --type "$ROOT_TYPE" \
  --expose export \
  --jsDoc extended \
  --out "$TMP"

mkdir -p "$(dirname "$OUT")"

# Post-processing. ts-json-schema-generator closes every TypeScript interface with
# "additionalProperties": false. The TypeScript types are generated (by Grafana's "cog") from
# Grafana's CUE dashboard schema, and that translation loses a few facts about the real JSON:
# CUE structs left open with `...`, keys Grafana itself persists that the types omit, and
# nullability that only the package's hand-written "veneer" types carry. Each relaxation below
# says why. Each one first asserts that the generated schema still looks the way it was when
# the relaxation was written, so an upgrade of @grafana/schema that changes these spots fails
# loudly here instead of silently drifting.
python3 - "$TMP" "$OUT" "$GRAFANA_SCHEMA_VERSION" "$GENERATOR_VERSION" "$SRC_REL" "$ROOT_TYPE" <<'PY'
import json
import sys

src, out, pkg_version, gen_version, src_rel, root_type = sys.argv[1:7]
with open(src, encoding="utf-8") as fh:
    schema = json.load(fh)
defs = schema["definitions"]


def expect(cond, what):
    if not cond:
        sys.exit(f"generate.sh post-processing: generated schema changed upstream: {what}")


def open_object(name, why):
    """Drop additionalProperties:false from definitions[name]; known properties keep their types."""
    node = defs.get(name)
    expect(node is not None and node.get("additionalProperties") is False,
           f"definitions/{name} is no longer a closed object")
    del node["additionalProperties"]
    node["$comment"] = f"rulesgen post-processing: additional properties allowed: {why}"


def allow_dunder_keys(node, path, why):
    """Keep node closed but accept keys starting with '__'."""
    expect(node.get("additionalProperties") is False and "patternProperties" not in node,
           f"{path} is no longer a closed object")
    node["patternProperties"] = {"^__": {}}
    node["$comment"] = f"rulesgen post-processing: keys starting with '__' allowed: {why}"


def nullable_ref(props, key, ref, path, why):
    expect(props.get(key, {}).get("$ref") == ref, f"{path} is no longer a $ref to {ref}")
    desc = props[key].get("description")
    props[key] = {"anyOf": [{"$ref": ref}, {"type": "null"}],
                  "$comment": f"rulesgen post-processing: null allowed: {why}"}
    if desc:
        props[key]["description"] = desc


# 1. Structs the upstream CUE schema declares open (`...`) or whose real JSON carries more keys
#    than the TypeScript type lists.
open_object("VariableModel",
            "CUE #VariableModel is open (`...`); Grafana persists type-specific keys the type omits, "
            "e.g. `definition` (query variables) and `auto`, `auto_min`, `auto_count` (interval variables)")
open_object("AnnotationQuery",
            "CUE #AnnotationQuery is open (`...`): datasources spread their query fields into the "
            "annotation object (e.g. Prometheus `expr`, `step`, `titleFormat`)")
open_object("AnnotationTarget",
            "CUE #AnnotationTarget is open (`...`): datasources put their raw DataQuery fields here")
open_object("FieldConfig",
            "@grafana/data's FieldConfig has standard options the schema lacks (`fieldMinMax`, "
            "`nullValueMode`, ...) and Grafana saves them in fieldConfig.defaults")
open_object("TimePickerConfig",
            "legacy keys (`time_options`, `collapse`, `enable`, ...) belonged to the schema until Grafana 11; "
            "Grafana only deletes `time_options` in its schemaVersion 41 migration, so schemaVersion <= 40 "
            "dashboards legitimately carry them")

# 2. Closed objects that must also accept Grafana's '__'-prefixed bookkeeping keys.
allow_dunder_keys(defs["Dashboard"], "definitions/Dashboard",
                  "'Export for sharing externally' adds `__inputs`, `__elements`, `__requires`")
overrides = defs["FieldConfigSource"]["properties"]["overrides"]
expect(overrides.get("type") == "array" and isinstance(overrides.get("items"), dict),
       "definitions/FieldConfigSource/properties/overrides is no longer an array of objects")
allow_dunder_keys(overrides["items"], "definitions/FieldConfigSource/properties/overrides/items",
                  "Grafana marks system-made overrides with `__systemRef` (e.g. \"hideSeriesFrom\" "
                  "from toggling a series in the legend)")

# 3. Nullability that the package's own veneer types (dist/types/veneer/dashboard.types.d.ts,
#    the `Dashboard` exported from the package root) declare but the raw types do not. The veneer
#    itself cannot be fed to the generator: it clashes on two `DataSourceRef` definitions.
nullable_ref(defs["VariableModel"]["properties"], "datasource", "#/definitions/DataSourceRef",
             "definitions/VariableModel/properties/datasource",
             "veneer VariableModel.datasource is `DataSourceRef | null`")
nullable_ref(defs["AnnotationQuery"]["properties"], "datasource", "#/definitions/DataSourceRef",
             "definitions/AnnotationQuery/properties/datasource",
             "veneer AnnotationQuery.datasource is `DataSourceRef | null`")

# 4. Grafana's dashboard exporter writes `"current": {}` for query and datasource variables
#    (@grafana/data: `current: VariableOption | Record<string, never>`).
vm_props = defs["VariableModel"]["properties"]
expect(vm_props.get("current", {}).get("$ref") == "#/definitions/VariableOption",
       "definitions/VariableModel/properties/current is no longer a $ref to VariableOption")
vm_props["current"] = {
    "anyOf": [{"$ref": "#/definitions/VariableOption"},
              {"type": "object", "maxProperties": 0}],
    "description": vm_props["current"].get("description", ""),
    "$comment": "rulesgen post-processing: empty object allowed: Grafana's exporter writes `current: {}`",
}

# 5. Panel links are data links ({title, url, targetBlank}) in real Grafana JSON, not the
#    dashboard-level DashboardLink (whose required asDropdown/icon/tags/... panels never carry).
#    The CUE source itself notes "TODO fill this out - seems there are a couple variants?".
panel_links = defs["Panel"]["properties"]["links"]
expect(panel_links.get("items") == {"$ref": "#/definitions/DashboardLink"},
       "definitions/Panel/properties/links/items is no longer a $ref to DashboardLink")
defs["PanelDataLink"] = {
    "type": "object",
    "description": "A panel (data) link as Grafana saves it.",
    "properties": {
        "title": {"type": "string"},
        "url": {"type": "string"},
        "targetBlank": {"type": "boolean"},
    },
    "required": ["title", "url"],
    "$comment": "rulesgen post-processing: added; mirrors @grafana/data DataLink (open: it has more optional keys)",
}
panel_links["items"] = {"anyOf": [{"$ref": "#/definitions/DashboardLink"},
                                  {"$ref": "#/definitions/PanelDataLink"}]}
panel_links["$comment"] = "rulesgen post-processing: panel links may be data links"

# 6. gnetId: Grafana's DashboardModel sets `gnetId = data.gnetId || null` and dashboards imported
#    from grafana.com store the numeric id, so null and numbers occur in real JSON.
gnet = defs["Dashboard"]["properties"]["gnetId"]
expect(gnet.get("type") == "string", "definitions/Dashboard/properties/gnetId is no longer a string")
gnet["type"] = ["string", "number", "null"]
gnet["$comment"] = "rulesgen post-processing: number and null allowed (Grafana writes both)"

schema["$comment"] = (
    f"Generated by tools/grafana-schema/generate.sh from @grafana/schema@{pkg_version} "
    f"({src_rel.removeprefix('node_modules/@grafana/schema/')}, type {root_type}) with "
    f"ts-json-schema-generator@{gen_version}, then post-processed (see tools/grafana-schema/README.md). "
    "Do not edit by hand."
)

with open(out, "w", encoding="utf-8") as fh:
    json.dump(schema, fh, sort_keys=True, indent=2, ensure_ascii=False)
    fh.write("\n")
PY

echo "wrote $(cd "$(dirname "$OUT")" && pwd)/$(basename "$OUT") (@grafana/schema@$GRAFANA_SCHEMA_VERSION, $(wc -c <"$OUT") bytes)"
