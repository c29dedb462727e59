"""Lustre llite stats: stats files of Lustre 2.10 and 2.15, ``lctl get_param llite.*.stats``.

No Lustre client can be mounted here. The file mode reads fixture files in the real
format; the lctl mode runs a stand-in ``lctl`` script that prints real ``lctl get_param``
output (said so in that test). Permission errors are produced by patching
the collector's file read (``read_small_text``): tests run as root, where chmod does not deny reads.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest

from rush.collect import lustre
from rush.collect.base import get_collector
from rush.collect.lustre import LustreCollector, parse_lctl_output, parse_stats_file
from rush.errors import CollectorError

FIXTURES = Path(__file__).parent / "fixtures" / "lustre"


def test_parse_lustre_2_15_stats_file():
    stats = parse_stats_file((FIXTURES / "llite_stats_2.15.txt").read_text(), "lustre-ffff8fb1a6b0c800")
    assert stats.snapshot_time == pytest.approx(1700000010.123456789)
    assert stats.counts["read_bytes"] == 120 and stats.sums["read_bytes"] == 52428800
    assert stats.sums["write_bytes"] == 40960
    assert stats.counts["ioctl"] == 4 and "ioctl" not in stats.sums  # "name count samples [unit]"
    assert stats.counts["inode_permission"] == 240
    assert "start_time" not in stats.counts and stats.bad_lines == 0


def test_parse_lustre_2_10_stats_file_without_sumsq():
    stats = parse_stats_file((FIXTURES / "llite_stats_2.10.txt").read_text(), "scratch-ffff")
    assert stats.snapshot_time == pytest.approx(1409337596.326791)
    assert stats.sums["read_bytes"] == 7340032 and stats.counts["open"] == 12


def test_parse_lctl_output_blocks():
    blocks = parse_lctl_output((FIXTURES / "lctl_get_param_llite_stats.txt").read_text())
    assert [b.filesystem for b in blocks] == ["lustre-ffff8fb1a6b0c800", "scratch-ffff8fb1a6b0d000"]
    assert [b.sums["read_bytes"] for b in blocks] == [52428800, 10485760]


def test_garbage_lines_are_skipped_with_a_warning(caplog):
    text = "snapshot_time  garbage secs.nsecs\nread_bytes 12 samples [bytes] 1 2 x\nwhat is this\nopen 3 samples [usecs]\n"
    stats = parse_stats_file(text, "fs-1", "stats")
    assert stats.counts == {"open": 3} and stats.bad_lines == 3 and stats.snapshot_time is None
    assert "bad number" in caplog.text and "not a stats line" in caplog.text


def test_a_flood_of_bad_lines_is_counted_not_logged_line_by_line(caplog):
    """Found by fuzzing (round 31): 2 million bad lines wrote 2 million warnings. The first
    WARNED_LINES of a block are warned about one by one, the rest in one line; all are counted."""
    from rush.collect.lustre import WARNED_LINES

    text = "open 3 samples [usecs]\n" + "what is this\n" * 5000
    with caplog.at_level(logging.WARNING):
        stats = parse_stats_file(text, "fs-1", "stats")
    assert stats.counts == {"open": 3} and stats.bad_lines == 5000
    assert len(caplog.records) == WARNED_LINES + 1
    assert f"{5000 - WARNED_LINES} more bad lines skipped" in caplog.records[-1].getMessage()


def write_stats(directory: Path, snapshot: float, read_bytes: int, opens: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    text = (FIXTURES / "llite_stats_2.15.txt").read_text()
    text = text.replace("1700000010.123456789", f"{snapshot:.9f}").replace("52428800", str(read_bytes))
    text = text.replace("open                      30 samples", f"open                      {opens} samples")
    (directory / "stats").write_text(text)


def test_collector_rates_summed_over_mounts(tmp_path):
    write_stats(tmp_path / "lustre-ffff01", 1000.0, 1_000_000, 30)
    write_stats(tmp_path / "scratch-ffff02", 1000.5, 0, 0)
    collector = get_collector("lustre", paths=(str(tmp_path / "*" / "stats"),), host="n1")
    assert collector.collect() == []
    write_stats(tmp_path / "lustre-ffff01", 1010.0, 11_000_000, 40)  # 1 MB/s, 1 open/s
    write_stats(tmp_path / "scratch-ffff02", 1005.5, 2_500_000, 5)  # 0.5 MB/s, 1 open/s
    samples = collector.collect()
    rates = {s.metric: s.value for s in samples}
    assert rates["lustre_read_bytes_per_s"] == pytest.approx(1_500_000)
    assert rates["lustre_open_ops_per_s"] == pytest.approx(2.0)
    assert rates["lustre_write_bytes_per_s"] == 0
    assert {s.timestamp for s in samples} == {1010.0} and {s.host for s in samples} == {"n1"}


def test_lctl_mode_with_a_stand_in_lctl(tmp_path):
    # No Lustre here: this script stands in for lctl and prints real `lctl get_param` output.
    output = tmp_path / "out.txt"
    shutil.copy(FIXTURES / "lctl_get_param_llite_stats.txt", output)
    lctl = tmp_path / "lctl"
    lctl.write_text(f'#!/bin/sh\n[ "$1 $2" = "get_param llite.*.stats" ] || exit 2\ncat {output}\n')
    lctl.chmod(0o755)
    collector = LustreCollector(mode="lctl", lctl=str(lctl), host="n1")
    assert collector.collect() == []
    text = output.read_text().replace("1700000010.123456789", "1700000020.123456789")
    output.write_text(text.replace("52428800", "62428800"))  # lustre mount: +1 MB/s over 10 s
    rates = {s.metric: s.value for s in collector.collect()}
    assert rates["lustre_read_bytes_per_s"] == pytest.approx(1_000_000)
    with pytest.raises(CollectorError, match="lctl failed") as err:
        LustreCollector(mode="lctl", lctl=str(tmp_path / "no-lctl")).collect()
    assert err.value.fix and "Lustre client" in err.value.fix


def test_missing_and_unreadable_stats(tmp_path, monkeypatch, caplog):
    with pytest.raises(CollectorError, match="no llite stats found") as err:
        LustreCollector(paths=(str(tmp_path / "none" / "*" / "stats"),)).collect()
    assert "mounted" in err.value.fix
    write_stats(tmp_path / "a-1", 1.0, 0, 0)
    write_stats(tmp_path / "b-2", 1.0, 0, 0)
    real = Path.read_text

    def deny_b(self, *args, **kwargs):  # root ignores chmod 000, so deny by patching
        if self.parent.name == "b-2" or os.environ.get("DENY_ALL"):
            raise PermissionError(13, "Permission denied")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(lustre, "read_small_text", lambda path, *a, **k: deny_b(Path(path)))
    pattern = (str(tmp_path / "*-*" / "stats"),)
    with caplog.at_level(logging.WARNING):
        assert [s.filesystem for s in LustreCollector(paths=pattern).read()] == ["a-1"]
    assert "permission denied" in caplog.text
    monkeypatch.setenv("DENY_ALL", "1")
    with pytest.raises(CollectorError, match="no llite stats file could be read") as err:
        LustreCollector(paths=pattern).collect()
    assert "root" in err.value.fix


def test_bad_mode_is_a_config_error():
    with pytest.raises(CollectorError, match="unknown lustre mode"):
        LustreCollector(mode="magic")
