"""The procfs counter source (rush/collect/procfs.py): exact rates from a fixture /proc tree,
absent and malformed files, and the real /proc of this machine."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from rush.collect.procfs import SOURCE, ProcfsCollector

NET = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: {lo} 10 0 0 0 0 0 0 {lo} 10 0 0 0 0 0 0
  eth0: 1000 5 0 0 0 0 0 0 2000 {pk} 0 0 0 0 0 0
"""
DISK = """ 253 0 vda {r} 0 {rs} 0 {w} 0 {ws} 0 0 {io} {wio} 0 0 0 0
 253 1 vda1 999 0 99999 0 999 0 99999 0 0 9999 9999 0 0 0 0
   7 0 loop0 999 0 99999 0 999 0 99999 0 0 9999 9999 0 0 0 0
"""
STAT = "cpu  {u} 0 {s} {i} {w} 0 0 0 0 0\ncpu0 1 1 1 1 1 0 0 0 0 0\nctxt {c}\nprocs_running 3\n"


def write_proc(root: Path, k: int) -> None:
    """Reading k (0, 1, ...): every counter advances by a known amount per reading."""
    (root / "net").mkdir(parents=True, exist_ok=True)
    (root / "pressure").mkdir(exist_ok=True)
    (root / "net" / "dev").write_text(NET.format(lo=1_000_000 * k, pk=7 * k))
    (root / "net" / "snmp").write_text(
        "Tcp: InSegs OutSegs RetransSegs\nTcp: {0} {0} {1}\n".format(100 * k, k)
    )
    (root / "diskstats").write_text(
        DISK.format(r=3 * k, rs=8 * k, w=5 * k, ws=16 * k, io=250 * k, wio=500 * k)
    )
    (root / "stat").write_text(STAT.format(u=60 * k, s=20 * k, i=10 * k, w=10 * k, c=1000 * k))
    (root / "loadavg").write_text("1.50 1.00 0.50 2/100 12345\n")
    (root / "meminfo").write_text(
        "MemTotal: 1000 kB\nMemFree: 100 kB\nMemAvailable: 250 kB\nDirty: 4 kB\nWriteback: 0 kB\n"
    )
    (root / "vmstat").write_text(f"pgfault {50 * k}\npgmajfault 0\npgpgin {2 * k}\npgpgout {3 * k}\n")
    (root / "pressure" / "io").write_text(
        f"some avg10=0 avg60=0 avg300=0 total={500_000 * k}\nfull avg10=0 avg60=0 avg300=0 total={100_000 * k}\n"
    )


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    proc, sys_ = tmp_path / "proc", tmp_path / "sys"
    (sys_ / "block" / "vda").mkdir(parents=True)  # a whole disk; vda1 is a partition
    write_proc(proc, 0)
    return proc, sys_


def test_rates_and_gauges_from_two_readings(tree: tuple[Path, Path]) -> None:
    proc, sys_ = tree
    now = [100.0]
    collector = ProcfsCollector(str(proc), str(sys_), host="node7", clock=lambda: now[0])
    first = {s.metric: s.value for s in collector.collect()}
    assert first == {  # counters only prime the tracker
        "load1": 1.5, "procs_running": 3.0, "mem_available_frac": 0.25,
        "mem_dirty_bytes": 4096.0, "mem_writeback_bytes": 0.0,
    }  # fmt: skip
    write_proc(proc, 1)
    now[0] = 102.0
    samples = collector.collect()
    assert {(s.host, s.source, s.timestamp) for s in samples} == {("node7", SOURCE, 102.0)}
    got = {s.metric: s.value for s in samples}
    per_2s = {
        "net_rcv_bytes_per_s": 1_000_000 / 2, "net_xmit_bytes_per_s": 1_000_000 / 2,
        "net_xmit_packets_per_s": 7 / 2, "net_rcv_packets_per_s": 0.0,
        "tcp_in_segs_per_s": 50.0, "tcp_retrans_segs_per_s": 0.5,
        "disk_read_ops_per_s": 1.5, "disk_read_bytes_per_s": 8 * 512 / 2,  # vda only
        "disk_write_ops_per_s": 2.5, "disk_write_bytes_per_s": 16 * 512 / 2,
        "disk_busy_frac": 0.125, "disk_queue": 0.25,
        "cpu_user_frac": 0.6, "cpu_system_frac": 0.2, "cpu_idle_frac": 0.1, "cpu_iowait_frac": 0.1,
        "cpu_steal_frac": 0.0, "ctxt_per_s": 500.0, "pgfault_per_s": 25.0, "pgpgout_per_s": 1.5,
        "psi_io_some_frac": 0.25, "psi_io_full_frac": 0.05,
    }  # fmt: skip
    for metric, value in per_2s.items():
        assert got[metric] == pytest.approx(value), metric
    assert collector.absent() == [str(proc / "pressure" / "cpu"), str(proc / "pressure" / "memory")]


def test_malformed_file_costs_only_its_metrics(tree: tuple[Path, Path]) -> None:
    proc, sys_ = tree
    now = [1.0]
    collector = ProcfsCollector(str(proc), str(sys_), host="n", clock=lambda: now[0])
    collector.collect()
    write_proc(proc, 1)
    now[0] = 2.0
    (proc / "net" / "dev").write_text("Inter-|\n face |\n    lo: not numbers at all\n")
    (proc / "stat").write_bytes(b"\xff\xfe cpu x y z\n")
    got = {s.metric for s in collector.collect()}
    assert not any(m.startswith(("net_", "cpu_")) for m in got)
    assert "disk_read_ops_per_s" in got and "load1" in got


def test_a_fifo_in_place_of_a_file_does_not_block(tree: tuple[Path, Path]) -> None:
    proc, sys_ = tree
    (proc / "loadavg").unlink()
    os.mkfifo(proc / "loadavg")
    got = {s.metric for s in ProcfsCollector(str(proc), str(sys_), host="n").collect()}
    assert "load1" not in got and "mem_available_frac" in got


def test_empty_tree_gives_nothing_and_lists_everything_absent(tmp_path: Path) -> None:
    collector = ProcfsCollector(str(tmp_path), str(tmp_path), host="n")
    assert collector.collect() == []
    assert str(tmp_path / "net" / "dev") in collector.absent()


def test_real_proc_of_this_machine() -> None:
    if not Path("/proc/net/dev").exists():
        pytest.skip("no procfs here")
    collector = ProcfsCollector()
    collector.collect()
    # /proc/stat counts CPU time in jiffies (10 ms): back-to-back readings can be equal, and
    # then no CPU fraction is defined; wait for the counters to move.
    time.sleep(0.3)
    metrics = {s.metric: s.value for s in collector.collect()}
    for name in ("net_xmit_bytes_per_s", "cpu_user_frac", "ctxt_per_s", "load1", "mem_available_frac"):
        assert name in metrics
    assert 0.0 <= metrics["cpu_idle_frac"] <= 1.0
