"""The user documentation (README.md and docs/*.md) is held to the code: every count the README states is
the render's, every relative link names a file (and heading) of the repository, every `README "Section"`
the code cites is a README heading, the README carries no commit hash, date or internal make target, and
the configuration reference is generated from the template `rulesgen init` writes and documents every key
the parser reads. No engine runs. Each checker is also run on a planted mistake, which it must report."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, run_cli

_spec = importlib.util.spec_from_file_location("config_doc", ROOT / "scripts" / "config_doc.py")
config_doc = sys.modules["config_doc"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(config_doc)

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
WORDS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve thirteen "
                                    "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
NUMBER = r"(\d[\d,]*|" + "|".join(WORDS) + r")"
# "<number> <noun>": every such count in the README is one of these, read by its context.
COUNTED = re.compile(NUMBER + r" (failure modes blind|failure modes|rule groups|groups|alerts|(?:Grafana )?dashboards"
                     r"|runbooks|recording rules)\b", re.IGNORECASE)
# The pages that describe the current render (the others also keep dated history, counts of their time).
CURRENT = [README, *(ROOT / "docs" / name for name in ("dashboards.md", "outputs.md", "deploying.md", "configuration.md"))]


def number(text: str) -> int:
    return WORDS[text.lower()] if text.lower() in WORDS else int(text.replace(",", ""))


# --- what the render holds --------------------------------------------------------------------------

def rendered_groups() -> list[tuple[str, str, str, int]]:
    """(file, group, interval, rules) of alerts/prometheus/, in file and group order."""
    out = []
    for path in sorted((ROOT / "alerts" / "prometheus").glob("*.yaml")):
        for group in yaml.safe_load(path.read_text())["groups"]:
            out.append((path.relative_to(ROOT).as_posix(), group["name"], group.get("interval", ""), len(group["rules"])))
    return out


@pytest.fixture(scope="module")
def truth(tmp_path_factory) -> dict[str, int]:
    """The counts a user of the defaults gets: the committed render (tests/test_render.py keeps it fresh) and
    `rulesgen list` (run where there is no rulesgen.yaml: the defaults)."""
    import json
    result = run_cli("list", "--format", "json", cwd=tmp_path_factory.mktemp("defaults"))
    assert result.returncode == 0, result.stderr
    modes = json.loads(result.stdout)["failure_modes"]
    rules = [r for path in sorted((ROOT / "alerts" / "prometheus").glob("*.yaml"))
             for g in yaml.safe_load(path.read_text())["groups"] for r in g["rules"]]
    return {"failure modes": len(modes),
            "failure modes blind": sum(m["opt_in_counters"] == "all" for m in modes),
            "groups": len({m["group"] for m in modes}),
            "rule groups": len(rendered_groups()),
            "alerts": sum("alert" in r for r in rules),
            "recording rules": sum("record" in r for r in rules),
            "dashboards": len(list((ROOT / "dashboards").glob("*.json"))),
            "runbooks": len(list((ROOT / "runbooks").glob("*.md")))}


def count_problems(text: str, truth: dict[str, int]) -> list[str]:
    """Every `<number> <noun>` of the text that differs from the render."""
    return [f"{m.group(0)!r}: the render has {truth[noun(m)]}" for m in COUNTED.finditer(text)
            if number(m.group(1)) != truth[noun(m)]]


def noun(m: re.Match) -> str:
    return m.group(2).lower().removeprefix("grafana ")


@pytest.mark.parametrize("path", CURRENT, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_count_a_page_states_is_the_renders(truth, path):
    assert count_problems(path.read_text(), truth) == []


def test_the_readme_states_the_counts_a_user_asks_first(truth):
    """So that the check above holds something: the README says how many failure modes, alerts, rule groups,
    dashboards and blind failure modes there are."""
    said = {noun(m) for m in COUNTED.finditer(README.read_text())}
    assert {"failure modes", "alerts", "rule groups", "dashboards", "failure modes blind"} <= said


def test_the_count_check_catches_a_planted_wrong_count(truth):
    planted = (f"The bundled catalog describes {truth['failure modes']} failure modes in five groups. They render to "
               f"37 alerts in 20 rule groups, 4 Grafana dashboards. The default counters leave five failure modes blind.")
    problems = count_problems(planted, truth)
    assert [p.split(":")[0] for p in problems] == ["'37 alerts'", "'20 rule groups'", "'4 Grafana dashboards'",
                                                   "'five failure modes blind'"]
    assert count_problems(planted.replace("37 alerts", f"{truth['alerts']} alerts")
                          .replace("4 Grafana", f"{truth['dashboards']} Grafana")
                          .replace("20 rule groups", f"{truth['rule groups']} rule groups")
                          .replace("leave five", f"leave {truth['failure modes blind']}"), truth) == []


# --- what the README keeps out --------------------------------------------------------------------------

def make_targets(makefile: Path) -> set[str]:
    phony = re.search(r"^\.PHONY:(.*)$", makefile.read_text(), re.MULTILINE)
    return set(phony.group(1).split())


def internals_problems(text: str) -> list[str]:
    """Commit hashes, dates, and the make targets of this repository that the GitOps scaffold does not have
    (its `make render`, `make ci`, `make tools` are the user's)."""
    internal = make_targets(ROOT / "Makefile") - make_targets(ROOT / "rulesgen" / "templates" / "init" / "Makefile")
    problems = [f"commit hash {h}" for h in re.findall(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b", text)]
    problems += [f"date {d}" for d in re.findall(r"\b20\d\d-\d\d-\d\d\b", text)]
    problems += [f"make {t}" for t in re.findall(r"\bmake ([\w.-]+)", text) if t in internal]
    problems += [".ci/run"] if ".ci/run" in text else []
    return problems


def test_the_readme_has_no_commit_hash_date_or_internal_make_target():
    assert internals_problems(README.read_text()) == []


def test_the_internals_check_catches_planted_ones():
    planted = "Measured 2026-11-26 (`make test-live`, commit 3eaf25c); run `make render`, `make ci` and .ci/run."
    assert internals_problems(planted) == ["commit hash 3eaf25c", "date 2026-11-26", "make test-live", ".ci/run"]


def test_no_absolute_machine_path_in_the_docs():
    found = [f"{p.relative_to(ROOT)}: {m}" for p in [README, *DOCS]
             for m in re.findall(r"(?<![\w.])/(?:work|home|Users|root|tmp)/\S*", p.read_text())]
    assert found == []


def test_the_package_description_is_the_readme():
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["readme"] == "README.md"
    # PyPI shows no relative image: the README draws none.
    assert re.findall(r"!\[[^\]]*\]\((?!https?://)[^)]*\)", README.read_text()) == []


# --- links -------------------------------------------------------------------------------------------------

def prose(text: str) -> str:
    """Markdown without fenced code blocks and inline code spans (no link lives there)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    text = re.sub(r"^(    |\t).*$", "", text, flags=re.MULTILINE)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    for m in re.finditer(r"^#{1,6} (.+?)#*$", text, re.MULTILINE):
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def link_problems(path: Path, text: str | None = None) -> list[str]:
    """Every relative link of a Markdown file must name a file or folder of the repository and, into a
    Markdown file, one of its headings."""
    text = path.read_text() if text is None else text
    problems = []
    for m in re.finditer(r"!?\[[^\]]*\]\(([^)\s]+)\)", prose(text)):
        target = m.group(1)
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        where = f"{path.relative_to(ROOT)}: ({target})"
        if ROOT not in dest.parents and dest != ROOT:
            problems.append(f"{where} leaves the repository")
        elif not dest.exists():
            problems.append(f"{where} names no file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where} names no heading of {dest.relative_to(ROOT)}")
    return problems


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(path):
    assert link_problems(path) == []


def test_the_link_check_catches_planted_broken_links():
    planted = ("[ok](docs/cli.md#diagnostics) [file](docs/nothing.md) [anchor](docs/cli.md#no-such-heading) "
               "[here](#why) [gone](#no-section) [web](https://example.com/x) `[code](nowhere.md)`")
    assert link_problems(README, planted) == [
        "README.md: (docs/nothing.md) names no file",
        "README.md: (docs/cli.md#no-such-heading) names no heading of docs/cli.md",
        "README.md: (#no-section) names no heading of README.md"]


def test_slugs_follow_github():
    assert slug("What `render` refuses to do") == "what-render-refuses-to-do"
    assert slug("An alert's trip through running servers") == "an-alerts-trip-through-running-servers"
    assert slug("2a. Prometheus") == "2a-prometheus"
    assert slug("Recipe: add a failure mode") == "recipe-add-a-failure-mode"


# --- README sections the code cites ---------------------------------------------------------------------

CITING = ("rulesgen", "catalog", "tests", "fixtures/scenariogen", "runbooks", "alerts", "docs", "benchmarks", "scripts")


def cited_sections() -> dict[str, set[str]]:
    """`README "Section"` (or `README \\"Section\\"` inside a Python string) -> the files citing it."""
    out: dict[str, set[str]] = {}
    for folder in CITING:
        for path in sorted((ROOT / folder).rglob("*")):
            if not path.is_file() or path.suffix not in (".py", ".yaml", ".md", ".j2") or "schemas" in path.parts \
                    or path == Path(__file__).resolve():
                continue
            text = path.read_text(errors="replace")
            for m in re.finditer(r'README "([^"\n]+)"|README \\"([^"\\\n]+)\\"', text):
                out.setdefault(m.group(1) or m.group(2), set()).add(path.relative_to(ROOT).as_posix())
    return out


def test_every_readme_section_the_code_cites_is_a_heading():
    headings = {m.group(1).strip() for m in re.finditer(r"^#{2,3} (.+)$", README.read_text(), re.MULTILINE)}
    cited = cited_sections()
    assert {"Alert identity", "Sharded topology", "Job metrics", "Engine fit"} <= set(cited)
    assert {section: sorted(files) for section, files in cited.items() if section not in headings} == {}


def test_the_readme_keeps_the_grace_period_the_catalog_cites():
    """catalog/failure_modes.yaml's for_source texts cite "--rules.alert.for-grace-period (README, 30s)"."""
    assert "(README, 30s)" in (ROOT / "catalog" / "failure_modes.yaml").read_text()
    assert "--rules.alert.for-grace-period=30s" in README.read_text()


# --- docs/configuration.md ---------------------------------------------------------------------------------

def test_the_configuration_reference_is_current():
    assert config_doc.current() == config_doc.generate(), \
        "docs/configuration.md is stale: run .venv/bin/python scripts/config_doc.py"


def parser_keys(tmp_path, monkeypatch, config: dict) -> set[str]:
    """The key paths rulesgen.yaml's parser reads (every Fields read, present or not) loading `config`."""
    from rulesgen.load import mapping
    from rulesgen.load.settings import load_settings
    read: set[str] = set()
    original = mapping.Fields._get

    def recording(self, key, required, default):
        path = config_doc.key_path(self.what, key)
        if path is not None:
            read.add(path)
        return original(self, key, required, default)
    monkeypatch.setattr(mapping.Fields, "_get", recording)
    file = tmp_path / "rulesgen.yaml"
    file.write_text(yaml.safe_dump(config))
    load_settings(file)
    return read


def documented_keys(text: str) -> set[str]:
    index = text.split("## Key index", 1)[1]
    return set(re.findall(r"^\| `([^`]+)` \|", index, re.MULTILINE))


def template_config() -> dict:
    from rulesgen.catalog import bundled_catalog_dir, load_catalog
    from rulesgen.load.config_template import config_template, uncomment
    return yaml.safe_load(uncomment(config_template(load_catalog(bundled_catalog_dir()))))


def test_every_key_the_parser_reads_is_documented_and_nothing_else(tmp_path, monkeypatch):
    read = config_doc.leaves(parser_keys(tmp_path, monkeypatch, template_config()))
    documented = documented_keys((ROOT / "docs" / "configuration.md").read_text())
    assert {"selector", "outputs.scenario_tests", "failure_modes.<id>.severity", "job_metrics.labels.rank"} <= read
    assert sorted(read - documented) == [], "keys the parser reads that docs/configuration.md does not document"
    assert sorted(documented - read) == [], "keys docs/configuration.md documents that the parser does not read"


def test_the_key_check_sees_a_key_the_parser_reads_but_the_doc_lacks(tmp_path, monkeypatch):
    read = config_doc.leaves(parser_keys(tmp_path, monkeypatch, template_config()))
    text = (ROOT / "docs" / "configuration.md").read_text().replace("| `baselines.seasonality` |", "| `gone` |")
    assert read - documented_keys(text) == {"baselines.seasonality"}
    assert config_doc.key_path("failure_modes.gpu_lost.thresholds", "stale_seconds") is None
    assert config_doc.key_path("failure_modes.gpu_lost", "for") == "failure_modes.<id>.for"
    assert config_doc.key_path("outputs.vmrule.labels", "release") is None
    assert config_doc.key_path("job_metrics.labels", "pod") == "job_metrics.labels.pod"


# --- docs/compatibility.md and docs/performance.md -----------------------------------------------------------

def test_the_engine_fit_table_is_the_render():
    text = (ROOT / "docs" / "compatibility.md").read_text()
    rows = [(m.group(1), m.group(2), m.group(3), int(m.group(4))) for m in
            re.finditer(r"^\| `(alerts/prometheus/[^`]+)` \| `([^`]+)` \| (\w+) \| (\d+) \|", text, re.MULTILINE)]
    assert rows == rendered_groups()


def test_the_group_counts_of_engine_fit_are_the_renders():
    from rulesgen.builders.rules import build_rules
    from rulesgen.catalog import bundled_catalog_dir, load_catalog
    from rulesgen.load.settings import Settings
    text = (ROOT / "docs" / "compatibility.md").read_text()
    m = re.search(r"render (\d+) groups \(at `max_rules_per_group: (\d+)`, (\d+)\)", text)
    assert m, "docs/compatibility.md: the group counts sentence is gone"
    catalog = load_catalog(bundled_catalog_dir())
    groups = (lambda s: sum(len(f.groups) for f in build_rules(catalog, s).files))
    assert int(m.group(1)) == groups(Settings()) == len(rendered_groups())
    assert int(m.group(3)) == groups(Settings(max_rules_per_group=int(m.group(2))))


def test_the_dialects_listed_are_rulesgens():
    from rulesgen.load.dialects import AXES, PRESETS
    section = (ROOT / "docs" / "compatibility.md").read_text().split("## Dialects", 1)[1].split("\n## ", 1)[0]
    presets = re.search(r"a preset \((.*?)\) or", section, re.DOTALL).group(1)
    axes = re.search(r"axes joined by `\+` \((.*?)\);", section, re.DOTALL).group(1)
    assert set(re.findall(r"`([\w.-]+)`", presets)) == set(PRESETS)
    assert set(re.findall(r"`([\w.-]+)`", axes)) == set(AXES)


def test_every_measurement_in_performance_is_dated_or_points_at_its_report():
    sections = (ROOT / "docs" / "performance.md").read_text().split("\n## ")[1:]
    assert sections
    undated = [s.splitlines()[0] for s in sections
               if not re.search(r"\b20\d\d-\d\d-\d\d\b", s) and "benchmarks/results/" not in s and "make bench" not in s]
    assert undated == []
