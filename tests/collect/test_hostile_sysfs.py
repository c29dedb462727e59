"""Hostile kernel counter files: InfiniBand sysfs counters, RAPL energy_uj and Lustre llite stats.

What sits at a counter's path may be garbage, empty, negative, beyond 64 bits, not UTF-8, a FIFO
(which blocked the collector forever), a directory or an endless device. Each case states what
the reader gives: the value, or a CollectorError naming the file; the collector then keeps the
other counters. Lustre stats lines with NaN, infinite or negative numbers are bad lines, skipped
and counted.
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

import pytest

from rush.collect.lustre import LustreCollector, parse_stats_file
from rush.collect.rapl import RaplCollector, _read_int
from rush.collect.sysfs_ib import SysfsIBCollector, read_counter
from rush.errors import CollectorError

FIXTURES = Path(__file__).parent / "fixtures"

# (id, file bytes or a special kind, expected value or None for a CollectorError)
COUNTER_CASES: list[tuple[str, bytes | str, int | None]] = [
    ("plain", b"12345\n", 12345),
    ("no-newline", b"7", 7),
    ("blanks", b"  42  \n", 42),
    ("top-of-64-bits", f"{2**64 - 1}\n".encode(), 2**64 - 1),
    ("empty", b"", None),
    ("newline-only", b"\n", None),
    ("text", b"abc\n", None),
    ("no-pma", b"N/A (no PMA)\n", None),
    ("negative", b"-5\n", None),
    ("2^64", f"{2**64}\n".encode(), None),
    ("2^70", f"{2**70}\n".encode(), None),
    ("5000-digits", b"9" * 5000 + b"\n", None),
    ("float", b"1e5\n", None),
    ("nan", b"nan\n", None),
    ("not-utf8", b"\xff\xfe12\n", None),
    ("nul", b"\x0012\n", None),
    ("two-megabytes", b"1" * (2 << 20), None),
    ("fifo", "fifo", None),
    ("directory", "directory", None),
]


def make(path: Path, content: bytes | str) -> None:
    if content == "fifo":
        os.mkfifo(path)
    elif content == "directory":
        path.mkdir()
    else:
        path.write_bytes(content)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("content", "expected"), [c[1:] for c in COUNTER_CASES], ids=[c[0] for c in COUNTER_CASES]
)
@pytest.mark.parametrize("reader", [read_counter, _read_int], ids=["sysfs_ib", "rapl"])
def test_hostile_counter_file(tmp_path: Path, reader, content, expected):
    path = tmp_path / "port_xmit_data"
    make(path, content)
    if expected is None:
        with pytest.raises(CollectorError) as err:
            reader(path)
        assert str(path) in str(err.value)
    else:
        assert reader(path) == expected


@pytest.fixture
def sysfs(tmp_path: Path) -> Path:
    root = tmp_path / "sys"
    shutil.copytree(FIXTURES / "sys", root)
    return root


@pytest.mark.parametrize(
    "content", ["fifo", b"-1\n", b"\xff\n", b""], ids=["fifo", "negative", "binary", "empty"]
)
def test_one_bad_ib_counter_keeps_the_others(sysfs: Path, content):
    counter = sysfs / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "counters" / "port_xmit_wait"
    counter.unlink()
    make(counter, content)
    collector = SysfsIBCollector(root=str(sysfs), host="n1", devices=["mlx5_0"])
    values = collector.read_counters()
    assert ("mlx5_0", "1", "port_xmit_wait") not in values and ("mlx5_0", "1", "port_xmit_data") in values
    assert any("port_xmit_wait" in e for e in collector.errors)


@pytest.mark.parametrize(
    ("file", "content"),
    [("energy_uj", "fifo"), ("energy_uj", b"-3\n"), ("max_energy_range_uj", b"0\n"), ("name", b"\xff\xfe")],
    ids=["energy-fifo", "energy-negative", "range-zero", "name-binary"],
)
def test_one_bad_rapl_zone_keeps_the_others(sysfs: Path, file: str, content):
    path = sysfs / "class" / "powercap" / "intel-rapl:1" / file
    path.unlink()
    make(path, content)
    collector = RaplCollector(root=str(sysfs), host="n1")
    readings = collector.read_energy()
    if file == "name":  # undecodable bytes are replaced: the zone is still read
        assert "intel-rapl:1" in readings
    else:
        assert "intel-rapl:1" not in readings and "intel-rapl:0" in readings
        assert any("intel-rapl:1" in e for e in collector.errors)


STATS = (FIXTURES / "lustre" / "llite_stats_2.15.txt").read_text()

# (id, text, counts read, bad lines)
LUSTRE_CASES = [
    ("plain", STATS, None, 0),
    ("nan-count", STATS + "fsync nan samples [usecs] 1 2 3 4\n", None, 1),
    ("inf-sum", STATS + "write_bytes 1 samples [bytes] 1 1 inf 1\n", None, 1),
    ("negative-count", STATS + "mmap -4 samples [reqs]\n", None, 1),
    ("nan-snapshot", "snapshot_time nan secs.nsecs\nopen 3 samples [reqs]\n", 1, 1),
    ("no-samples-word", "open 3 things\n", 0, 1),
    ("short-line", "open\n", 0, 1),
    ("binary", "\x00\xff\x01 samples\n", 0, 1),
    ("empty", "", 0, 0),
]


@pytest.mark.parametrize(
    ("text", "counts", "bad"), [c[1:] for c in LUSTRE_CASES], ids=[c[0] for c in LUSTRE_CASES]
)
def test_hostile_lustre_stats(text: str, counts: int | None, bad: int):
    stats = parse_stats_file(text, "fs")
    assert stats.bad_lines == bad
    if counts is not None:
        assert len(stats.counts) == counts
    assert all(math.isfinite(v) and v >= 0 for v in [*stats.counts.values(), *stats.sums.values()])
    assert stats.snapshot_time is None or math.isfinite(stats.snapshot_time)


def test_lustre_special_files_are_skipped_with_a_reason(tmp_path: Path):
    good = tmp_path / "a-1" / "stats"
    good.parent.mkdir()
    good.write_text(STATS)
    fifo = tmp_path / "b-2" / "stats"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    (tmp_path / "c-3").mkdir()
    (tmp_path / "c-3" / "stats").write_bytes(b"x" * (2 << 20))
    collector = LustreCollector(paths=(str(tmp_path / "*" / "stats"),))
    assert [s.filesystem for s in collector.read()] == ["a-1"]
    only_bad = LustreCollector(paths=(str(fifo),))
    with pytest.raises(CollectorError, match="not a regular file"):
        only_bad.read()
