"""Issue 37 item 6, fits delivery: a client-side `kubectl apply` copies the whole object into its
kubectl.kubernetes.io/last-applied-configuration annotation, and Kubernetes refuses an object whose annotations
total more than 256 KiB (k8s.io/apimachinery/pkg/api/validation TotalAnnotationSizeLimitB). GPU Health's
ConfigMap was at 94% of it on main. The dashboard resources carry the dashboards as compact JSON, every one stays
under MARGIN of the limit, and `rulesgen render` warns (and says to apply server-side) when one does not.

No cluster runs here: the size is computed as kubectl writes it (Go's encoding/json of the object, compact, with
its HTML-safe escapes), from the rendered resources.
"""
import json
from types import SimpleNamespace

import yaml

from conftest import ROOT
from dashboard_views import bundled_plan
from rulesgen.cli.app import apply_size_warnings
from rulesgen.model.output import Artifact
from rulesgen.render.kube import ANNOTATION_LIMIT, LAST_APPLIED, compact_json, last_applied_size, oversized

MARGIN = 0.75  # of the limit: room for a catalog a quarter bigger (more failure modes, longer texts)
FOLDERS = ("deploy/grafana-dashboards", "deploy/grafana-operator")


def resources():
    return [a for a in bundled_plan().artifacts if a.path.startswith(FOLDERS) and not a.path.endswith("kustomization.yaml")]


def dashboard_text(doc) -> str:
    return next(iter(doc["data"].values())) if doc["kind"] == "ConfigMap" else doc["spec"]["json"]


def test_every_dashboard_resource_stays_well_under_kubectls_annotation_limit():
    found = resources()
    assert len(found) == 10
    sizes = {a.path: last_applied_size(yaml.safe_load(a.text)) for a in found}
    over = {path: f"{size:,} bytes, {size / ANNOTATION_LIMIT:.0%}" for path, size in sizes.items()
            if size > MARGIN * ANNOTATION_LIMIT}
    assert over == {}, f"over {MARGIN:.0%} of {ANNOTATION_LIMIT:,}: {over}"
    assert max(sizes.values()) > 0.3 * ANNOTATION_LIMIT  # GPU Health: the measure is of the real thing


def test_the_resources_carry_the_dashboards_compact():
    for a in resources():
        doc = yaml.safe_load(a.text)
        name = a.path.rsplit("/rulesgen-", 1)[1].removesuffix(".yaml")
        committed = (ROOT / "dashboards" / f"{name}.json").read_text()
        assert dashboard_text(doc) == compact_json(committed) and json.loads(dashboard_text(doc)) == json.loads(committed)
        assert "\n" not in dashboard_text(doc)


def test_the_size_is_counted_as_kubectl_writes_it():
    """Compact JSON, UTF-8, <, > and & escaped (6 bytes each), the object's own annotations and the key."""
    doc = {"metadata": {"annotations": {"grafana_folder": "GPU"}}, "data": {"d.json": "a<b & c>d é"}}
    text = json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"
    assert last_applied_size(doc) == (len(LAST_APPLIED) + len(text.encode()) + 3 * 5
                                      + len("grafana_folder") + len("GPU"))


def test_an_oversized_dashboard_is_named_and_render_says_to_apply_server_side(capsys):
    big = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rulesgen-big"},
           "data": {"big.json": "x" * ANNOTATION_LIMIT}}
    planted = Artifact("deploy/grafana-dashboards/rulesgen-big.yaml", yaml.safe_dump(big))
    assert oversized([planted, *resources()]) == [(planted.path, last_applied_size(big))]
    assert oversized(resources()) == []
    apply_size_warnings(SimpleNamespace(artifacts=[planted, *resources()]))
    assert capsys.readouterr().err == (
        f"warning: {planted.path}: a client-side `kubectl apply` would write {last_applied_size(big):,} bytes of "
        f"annotations ({LAST_APPLIED}), over Kubernetes' {ANNOTATION_LIMIT:,}: apply it with `kubectl apply --server-side`\n")
