"""dashboard-json: a dashboard file (*.json given to `rulesgen lint`) that does not load as a JSON object:
reported by the runner when it reads the file (runner.load_board), no function."""
from .base import Check

CHECK = Check("dashboard-json", "error", False, "a dashboard file (*.json) does not parse as a JSON object")
