"""The machine and the per-job node requests derived from SWF headers and jobs (issue 20 §1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rush.errors import TraceFormatError
from rush.workload.machine import header_number
from rush.workload.model import workload_from_trace
from rush.workload.swf import read_swf
from tests.workload.helpers import MIRROR, manifest


def _swf(tmp_path: Path, header: str, jobs: list[tuple[int, int]], name: str = "t.swf") -> Path:
    """An SWF file with ``header`` lines and jobs given as (procs, partition)."""
    lines = [f"; {line}" for line in header.strip().splitlines()]
    for k, (procs, part) in enumerate(jobs, start=1):
        lines.append(f"{k} {k * 10} 0 100 {procs} -1 -1 {procs} 200 -1 1 1 1 -1 1 {part} -1 -1")
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


WHOLE = "Version: 2.2\nMaxNodes: 4\nMaxProcs: 32\nPartition:  1  pbatch\nPartition:  2  pdebug"


def test_whole_node_log_asks_for_exclusive_nodes(tmp_path: Path) -> None:
    w = workload_from_trace(read_swf(_swf(tmp_path, WHOLE, [(8, 1), (24, 2), (32, 1)])))
    m, r = w.machine, w.requests
    assert (m.nodes, m.cores_per_node, m.procs, m.whole_node) == (4, 8, 32, True)
    assert r.nodes.tolist() == [1, 3, 4]
    assert r.cores_per_node.tolist() == [8, 8, 8]
    assert r.exclusive.all() and not r.gpus_per_node.any()
    assert r.partition.tolist() == [1, 2, 1]
    # The core's Request occupies exactly the job's processors: procs results stay exact.
    requests = [r.request(j, m) for j in range(len(w))]
    assert [q.procs(m.cores_per_node) for q in requests] == w.procs.tolist()
    assert [q.partition for q in requests] == ["pbatch", "pdebug", "pbatch"]


def test_a_job_that_is_not_whole_nodes_makes_the_log_cores_only(tmp_path: Path) -> None:
    w = workload_from_trace(read_swf(_swf(tmp_path, WHOLE, [(8, 1), (12, 1)])))
    assert not w.machine.whole_node
    assert "1 of 2 jobs" in w.machine.why
    # Cores only: one-core nodes, each job its processor count anywhere.
    assert (w.machine.nodes, w.machine.cores_per_node) == (32, 1)
    assert w.requests.nodes.tolist() == [0, 0]
    assert w.requests.cores_per_node.tolist() == w.procs.tolist() == [8, 12]
    assert not w.requests.exclusive.any()


def test_forcing_whole_nodes_names_the_contradicting_job_line(tmp_path: Path) -> None:
    path = _swf(tmp_path, WHOLE, [(8, 1), (12, 1)])
    text = path.read_text().splitlines()
    text.insert(len(text) - 1, "this line is malformed")  # the reader skips it; the line count must not
    path.write_text("\n".join(text) + "\n")
    trace = read_swf(path)
    with pytest.raises(TraceFormatError) as err:
        workload_from_trace(trace, whole_node=True)
    assert err.value.where == f"{path}:{len(text)}"
    assert text[len(text) - 1].startswith("2 20 ")
    assert "12 processors" in err.value.message and "whole_node=False" in err.value.fix


def test_a_wider_job_is_dropped_as_in_a_procs_trace(tmp_path: Path) -> None:
    w = workload_from_trace(read_swf(_swf(tmp_path, WHOLE, [(8, 1), (40, 1), (16, 1)])))
    assert w.dropped == {"procs>machine": 1}
    assert w.machine.whole_node
    assert w.requests.nodes.tolist() == [1, 2]
    assert w.requests.nodes.max() <= w.machine.nodes


@pytest.mark.parametrize(
    ("header", "key", "why"),
    [
        ("MaxNodes: 4\nMaxProcs: 30", "MaxProcs", "nodes of unequal size"),
        ("MaxNodes: 8\nMaxProcs: 4", "MaxProcs", "fewer processors than nodes"),
        ("MaxProcs: 32", "MaxNodes", "no MaxNodes"),
    ],
)
def test_contradicting_headers_read_as_cores_and_refuse_nodes(
    tmp_path: Path, header: str, key: str, why: str
) -> None:
    path = _swf(tmp_path, "Version: 2.2\n" + header, [(4, -1), (4, -1)])
    trace = read_swf(path)
    w = workload_from_trace(trace)
    assert not w.machine.whole_node and why in w.machine.why
    assert w.requests.nodes.tolist() == [0, 0]
    with pytest.raises(TraceFormatError) as err:
        workload_from_trace(trace, cores_per_node=8)
    line = {"MaxNodes": None, "MaxProcs": 3}[key]  # Version is line 1, MaxNodes/MaxProcs follow
    assert err.value.where == (f"{path}:{line}" if line else f"{path} (header MaxNodes)")
    assert err.value.fix


def test_wrong_cores_per_node_names_the_header_line(tmp_path: Path) -> None:
    path = _swf(tmp_path, WHOLE, [(8, 1)])
    with pytest.raises(TraceFormatError) as err:
        workload_from_trace(read_swf(path), cores_per_node=16)
    assert err.value.where == f"{path}:3"
    assert "use 8 cores per node" in err.value.fix


def test_a_procs_override_keeps_whole_nodes_only_when_they_divide(tmp_path: Path) -> None:
    trace = read_swf(_swf(tmp_path, WHOLE, [(8, 1), (16, 1)]))
    assert workload_from_trace(trace, 64).machine.nodes == 8
    assert not workload_from_trace(trace, 60).machine.whole_node
    with pytest.raises(TraceFormatError) as err:
        workload_from_trace(trace, 60, whole_node=True)
    assert err.value.where == "--procs"


def test_subset_keeps_requests_aligned(tmp_path: Path) -> None:
    w = workload_from_trace(read_swf(_swf(tmp_path, WHOLE, [(8, 1), (24, 2), (32, 1)])))
    part = w.subset(np.array([2, 0]))
    assert part.requests.nodes.tolist() == [4, 1]
    assert part.machine is w.machine


def test_header_number_reads_the_first_number() -> None:
    assert header_number("338 (batch partition; 512 total)") == 338
    assert header_number("184  ( 6,  171,   7)") == 184
    assert [header_number(t) for t in ("-", "", "0", "²", "99999999999")] == [None] * 5


def _expected_whole(header: dict[str, str], procs: np.ndarray) -> int:
    """Cores per node of a whole-node log, computed here from the header and the jobs (0: not one)."""
    nodes, total = header_number(header.get("MaxNodes", "")), header_number(header.get("MaxProcs", ""))
    if nodes is None or total is None or total % nodes or total == nodes:
        return 0
    cores = total // nodes
    return cores if bool(np.all(procs % cores == 0)) else 0


def test_every_mirrored_trace_gets_a_consistent_machine() -> None:
    rows = manifest()
    whole = {}
    for name in sorted(rows):
        trace = read_swf(MIRROR / name)
        w = workload_from_trace(trace)
        m, r = w.machine, w.requests
        cores = _expected_whole(trace.header, w.procs)
        assert m.whole_node == bool(cores), name
        assert m.nodes * m.cores_per_node == m.procs == w.machine_procs, name
        if m.whole_node:
            whole[trace.name.split("-20")[0].split("-19")[0]] = (m.nodes, m.cores_per_node)
            assert np.array_equal(r.nodes * m.cores_per_node, w.procs), name
            assert r.exclusive.all() and r.nodes.max() <= m.nodes, name
        else:
            assert not r.nodes.any() and np.array_equal(r.cores_per_node, w.procs), name
        assert np.array_equal(r.partition, w.extra["partition"]), name
    # The archive's notes: Blue Horizon's 8-way SMP nodes, LLNL's Slurm clusters (whole nodes).
    assert whole == {"LLNL-Atlas": (1152, 8), "LLNL-Thunder": (1002, 4), "SDSC-BLUE": (144, 8)}


@pytest.mark.parametrize("name", ["KTH-SP2-1996-2.1-cln.swf.gz", "SDSC-BLUE-2000-4.2-cln.swf.gz"])
def test_node_derivation_leaves_the_procs_arrays_unchanged(name: str) -> None:
    if name not in manifest():
        pytest.skip(f"{name} is not in the mirror")
    trace = read_swf(MIRROR / name)
    bare = trace.subset(np.arange(len(trace)))
    bare.header = {k: v for k, v in trace.header.items() if k != "MaxNodes"}  # no node derivation
    with_nodes, without = workload_from_trace(trace), workload_from_trace(bare)
    assert without.requests.nodes.max() == 0
    for column in ("job_id", "submit", "runtime", "procs", "requested_time", "user"):
        assert np.array_equal(getattr(with_nodes, column), getattr(without, column)), column
    assert with_nodes.machine_procs == without.machine_procs
    assert with_nodes.dropped == without.dropped
