"""Where rulesgen looks for its engines: ./.tools, then the checkout's own .tools (an editable install)."""
from pathlib import Path

from rulesgen.engines import tools

ROOT = Path(__file__).resolve().parents[3]


def test_the_checkouts_own_tools_are_searched_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert tools._tools_dirs() == [Path.cwd() / ".tools", ROOT / ".tools"]
