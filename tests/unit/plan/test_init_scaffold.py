"""rulesgen/init.py in-process: where the CI workflow goes (a repository's root only runs its own
.github/workflows), the workflow's working folder, and a scaffold that keeps the user's files unless forced."""
import yaml

from rulesgen import init


def test_outside_git_the_workflow_goes_in_the_folder_with_a_note(tmp_path):
    place = init.workflow_place(tmp_path)
    assert (place.path, place.workdir) == (tmp_path / init.WORKFLOW, ".") and "not in a git repository" in place.note


def test_in_a_subfolder_of_a_repository_the_workflow_goes_to_the_root_working_in_the_subfolder(tmp_path):
    (tmp_path / ".git").mkdir()
    sub = tmp_path / "clusters" / "gpu"
    sub.mkdir(parents=True)
    place = init.workflow_place(sub)
    assert place.path == tmp_path / ".github" / "workflows" / "gpu-rules-clusters-gpu.yaml"
    assert place.workdir == "clusters/gpu"
    doc = yaml.safe_load(init.workflow_text(place.workdir))
    assert doc["name"] == "gpu-rules (clusters/gpu)" and doc["defaults"]["run"]["working-directory"] == "clusters/gpu"
    assert "__WORKDIR__" not in init.workflow_text(place.workdir) and "__PREFIX__" not in init.workflow_text(".")


def test_the_repository_root_is_found_from_a_worktrees_git_file(tmp_path):
    (tmp_path / ".git").write_text("gitdir: elsewhere\n")
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert init.git_root(tmp_path / "a" / "b") == tmp_path.resolve()


def test_a_scaffold_keeps_existing_files_unless_forced(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Makefile").write_text("mine\n")
    written, skipped, notes = init.scaffold(tmp_path)
    assert skipped == ["Makefile"] and (tmp_path / "Makefile").read_text() == "mine\n"
    assert {"rulesgen.yaml", "rulesgen.lock", ".gitignore", "scenarios/example-ghost-loss-dbe.yaml",
            init.WORKFLOW} <= set(written)
    assert (tmp_path / "rulesgen.yaml").read_text().startswith("## rulesgen configuration") and len(notes) == 1
    written, skipped, _ = init.scaffold(tmp_path, force=True)
    assert skipped == [] and "Makefile" in written and (tmp_path / "Makefile").read_text() != "mine\n"


def test_next_steps_name_the_modes_the_default_counters_leave_blind():
    from rulesgen.catalog import bundled_catalog_dir, load_catalog
    catalog = load_catalog(bundled_catalog_dir())
    first = init.next_steps(catalog)[0]
    defaults = {m.name for m in catalog.metrics if m.default_enabled}
    blind = [fm.id for fm in catalog.failure_modes if fm.metrics and not any(catalog.metric(n).name in defaults for n in fm.metrics)]
    assert blind and all(mode in first for mode in blind) and first.startswith("deploy the exporter counters")
