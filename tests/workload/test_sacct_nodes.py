"""Node-level fields of Slurm accounting: nodes, GPUs, exclusivity, partition (issue 20 §1)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from rush.errors import TraceFormatError
from rush.workload.model import workload_from_trace
from rush.workload.sacct import read_sacct
from tests.workload.sacct_samples import JOBS_2205, PARSABLE

HEADER = "JobIDRaw|Submit|Start|End|AllocCPUS|ReqCPUS|Partition|State|NNodes|AllocTRES|ReqTRES|SubmitLine"
T = "2023-01-02T03:00:00|2023-01-02T03:10:00|2023-01-02T05:10:00"
NODE_JOBS = [
    # Two exclusive GPU nodes; Slurm lists the typed GPUs beside the total (not counted twice).
    f"1|{T}|64|64|gpu|COMPLETED|2|billing=64,cpu=64,gres/gpu=8,gres/gpu:a100=8,mem=8G,node=2|"
    "cpu=64,gres/gpu=8,node=2|sbatch --exclusive -N2 --gpus=8 run.sh | tee log",
    # One shared node, no GPUs; -x is --exclude, not --exclusive.
    f"2|{T}|4|4|batch|COMPLETED|1|cpu=4,mem=1G,node=1|cpu=4,node=1|sbatch -x n01 -n4 run.sh",
    # Pending: no allocation, the requested GPUs (typed only) and NNodes as requested.
    "3|2023-01-02T04:00:00|Unknown|Unknown|0|16|gpu|PENDING|4||cpu=16,gres/gpu:v100=4,node=4|sbatch -N4 x",
]


def _write(tmp_path: Path, lines: list[str], name: str = "acct.txt") -> Path:
    path = tmp_path / name
    path.write_text("\n".join([HEADER, *lines]) + "\n")
    return path


def test_parsable_nodes_gpus_exclusive_and_partition(tmp_path: Path) -> None:
    trace = read_sacct(_write(tmp_path, NODE_JOBS), timezone="UTC")
    cols = trace.node_columns
    assert cols["nodes"].tolist() == [2, 1, 4]
    assert cols["cores_per_node"].tolist() == [32, 4, 4]
    assert cols["gpus_per_node"].tolist() == [4, 0, 1]
    assert cols["exclusive"].tolist() == [True, False, False]
    names = [trace.labels["queue"][int(k)] for k in cols["partition"]]
    assert names == ["gpu", "batch", "gpu"]
    w = workload_from_trace(trace)  # the pending job has no runtime: dropped
    assert w.machine.nodes == 0 and "sacct" in w.machine.why
    first = w.requests.request(0, w.machine)
    assert (first.nodes, first.cores_per_node, first.gpus_per_node, first.exclusive) == (2, 32, 4, True)
    assert first.partition == "gpu"


def test_jobs_without_node_columns_are_cores_only(tmp_path: Path) -> None:
    path = tmp_path / "plain.txt"
    path.write_text(PARSABLE)
    trace = read_sacct(path, timezone="UTC")
    assert trace.node_columns["nodes"].tolist() == [0, 0, 0]
    assert trace.node_columns["cores_per_node"].tolist() == [16, 1, 4]


def test_json_tres_nodes_and_gpus(tmp_path: Path) -> None:
    doc = copy.deepcopy(JOBS_2205)
    doc["jobs"][0]["tres"]["allocated"].append({"type": "gres", "name": "gpu", "id": 1001, "count": 4})
    path = tmp_path / "a.json"
    path.write_text(json.dumps(doc))
    cols = read_sacct(path).node_columns
    assert cols["nodes"].tolist() == [2, 0]
    assert cols["cores_per_node"].tolist() == [32, 8]
    assert cols["gpus_per_node"].tolist() == [2, 0]


@pytest.mark.parametrize(
    ("job", "said"),
    [
        (f"4|{T}|4|4|batch|COMPLETED|1|cpu=4,gres/gpu=two|cpu=4|x", "gres/gpu = 'two'"),
        (f"4|{T}|4|4|batch|COMPLETED|-1|cpu=4|cpu=4|x", "NNodes = '-1'"),
        (f"4|{T}|4|4|batch|COMPLETED|1|cpu=4,node|cpu=4|x", "'node' is not key=value"),
    ],
)
def test_malformed_counts_name_the_line(tmp_path: Path, job: str, said: str) -> None:
    path = _write(tmp_path, [NODE_JOBS[1], job])
    with pytest.raises(TraceFormatError) as err:
        read_sacct(path, timezone="UTC")
    assert err.value.where == f"{path}:3"
    assert said in err.value.message
    assert "NNodes" in err.value.fix


def test_json_malformed_gpu_count_names_the_job(tmp_path: Path) -> None:
    doc = copy.deepcopy(JOBS_2205)
    doc["jobs"][1]["tres"]["allocated"] = [{"type": "gres", "name": "gpu", "count": -2}]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError) as err:
        read_sacct(path)
    assert err.value.where == f"{path}: jobs[1]"
    assert "gres/gpu" in err.value.message
