"""cli/backfill.py: what it refuses before it reaches any server."""
from pathlib import Path

from click.testing import CliRunner

from rulesgen.cli.backfill import backfill_group

SHARDED = """\
slos:
  gpu_capacity: {}
topology: sharded
sharding:
  write_url: http://global-tsdb.example:8428/api/v1/write
  source: static
  values: [shard-0, shard-1]
"""


def test_a_sharded_render_backfills_its_baselines_but_not_its_slos(tmp_path: Path):
    config = tmp_path / "rulesgen.yaml"
    config.write_text(SHARDED)
    url = "http://127.0.0.1:9"  # nothing listens: the refusal comes first
    result = CliRunner().invoke(backfill_group, ["victoriametrics", "--config", str(config), "--url", url])
    assert result.exit_code == 1
    assert "with topology: sharded the global tier holds only the shards' partial records" in result.output
    assert "--only baselines" in result.output
    # the baselines alone get as far as the server
    result = CliRunner().invoke(backfill_group, ["victoriametrics", "--only", "baselines", "--config", str(config),
                                                 "--url", url, "--days", "1"])
    assert result.exit_code == 1 and "vmalert could not reach" in result.output, result.output
