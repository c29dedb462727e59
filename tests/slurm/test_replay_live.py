"""Replay mode on the real Slurm: a trace window as sleep jobs, then the fidelity report."""

from __future__ import annotations

import json

from rush.core.config import CoreConfig
from rush.daemon.replay import replay
from rush.daemon.replay_window import Window
from rush.rjms.base import get_backend
from rush.workload.model import workload_from_trace
from tests.core.test_real_traces import MIRROR, real_workload


def test_replay_50_kth_jobs(slurm, tmp_path):
    workload = real_workload("KTH-SP2")
    backend = get_backend("slurm", slurm_conf=str(slurm.conf))
    report = replay(backend, workload, Window(0, 50), speedup=5000, config=CoreConfig.from_names("FCFS", "easy"), timeout=600)
    (tmp_path / "fidelity.json").write_text(json.dumps(report, indent=1))
    assert report["jobs"] == 50 and report["unfinished"] == 0
    assert report["window"]["cpus"] == slurm.cpus
    assert len(report["per_job"]) == 50
    assert set(report["metrics"]) >= {"mean_wait", "mean_bounded_slowdown", "utilization"}
    for pair in report["metrics"].values():
        assert pair["simulator"] is not None and pair["slurm"] is not None
    diff = report["start_difference"]
    assert diff["max_abs"] >= diff["p90_abs"] >= diff["median_abs"] >= 0
    print(json.dumps({k: report[k] for k in ("start_difference", "metrics", "submit_latency")}, indent=1))
    assert MIRROR.exists() and workload_from_trace
