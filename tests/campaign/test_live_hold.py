"""Live acceptance on the REAL test Slurm: the daemon with the *learned* variation predictor holds a
network-type job while the noise job runs, and releases it when the noise stops or at its skip
limit; the journal shows the predictions.

The model is trained in the test (helper F's pipeline: build_dataset, train_variability) on a
synthetic campaign in which "noise on" is exactly "a high network counter" (procfs
``net_xmit_bytes_per_s`` in the window before the start), so what it predicts is deterministic.
Everything live is real: the noise job is collectors/noise.py submitted to Slurm (its
``network`` kind: a loopback TCP stream of ~1 GB/s here, against ~0.1 MB/s of background), the
counters are sampled from this host's procfs into a feature store by the campaign's sampler,
and the daemon holds and releases through Slurm.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rush.campaign.runner import NOISE_SCRIPT
from rush.planner.config import parse_config
from rush.rjms.base import get_backend
from tests import polling
from tests.live_rush_common import NOISY, WINDOW, train_model, window_mean
from tests.live_rush_common import live_store as sampled_store

# A begin time in the future keeps Slurm from starting the job before rush holds it.
LATER = "--begin=now+600"


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dataset_mod = pytest.importorskip(
        "rush.models.variability.dataset", reason="helper F's dataset builder absent"
    )
    train_mod = pytest.importorskip("rush.models.variability.train", reason="helper F's training absent")
    return train_model(tmp_path_factory.mktemp("live-hold-model"), dataset_mod, train_mod)


@pytest.fixture
def live_store(tmp_path: Path) -> Iterator[Path]:
    with sampled_store(tmp_path / "features.sqlite") as path:
        yield path


def wait_for(predicate: Any, timeout: float = 90.0, step: float = 0.5) -> Any:
    return polling.wait_for(predicate, timeout, step)


def start_noise(cluster: Any, log: Path) -> int:
    job_id = cluster.submit(
        "-n", "1", "-t", "10", "--comment=rush:app=noise",
        "--wrap", f"{sys.executable} {NOISE_SCRIPT} --seed=1 --log={log} --kinds=network --start-on --on=500:500 --duration=500",
    )  # fmt: skip
    wait_for(lambda: log.exists() and '"event": "on"' in log.read_text())
    return job_id


def daemon_for(cluster: Any, tmp_path: Path, store: Path, model: Path, skip_limit: int) -> Any:
    from rush.daemon.service import Daemon

    cfg = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": False},
            "policy": {"policy": "FCFS", "threshold": "none", "skip_limit": skip_limit},
            "rjms": {"backend": "slurm", "options": cluster.options(timeout=8)},
            "variation": {"enabled": True, "predictor": "learned", "store": str(store), "model": str(model)},
        }
    )
    return Daemon(cfg)


def held(cluster: Any, job_id: int) -> bool:
    return get_backend("slurm", **cluster.options()).job(job_id).held


def arrival(cluster: Any) -> int:
    """A job arrives (user-held, so it never runs): the next cycle reads an RJMS event, and
    only such a cycle counts a skip (rush.core.skip_with_limit)."""
    return cluster.submit("-n", "1", "-t", "1", "--hold", "--wrap", "true")


def test_network_job_held_while_noise_runs_released_when_it_stops(
    slurm: Any, tmp_path: Path, model: Path, live_store: Path
) -> None:
    noise_log = tmp_path / "noise.jsonl"
    noise = start_noise(slurm, noise_log)
    wait_for(lambda: window_mean(live_store) > NOISY)  # the whole window sees the noise
    network = slurm.submit("-n", "2", "-t", "5", "--comment=rush:wtype=network", LATER, "--wrap", "sleep 1")
    daemon = daemon_for(slurm, tmp_path, live_store, model, skip_limit=50)
    daemon.run_cycle()  # the daemon's first cycle: an event
    assert held(slurm, network) and daemon.journal.job(network).skips == 1
    daemon.run_cycle()  # the same queue: a periodic cycle keeps the job held, counts nothing
    assert held(slurm, network) and daemon.journal.job(network).skips == 1
    arrival(slurm)
    daemon.run_cycle()
    assert held(slurm, network) and daemon.journal.job(network).skips == 2
    hold = daemon.journal.decisions(network, "hold")[0]
    assert hold["status"] == "done"
    outputs = hold["model_outputs"]
    assert outputs["variation_class"] == "variation", outputs
    assert outputs["variation_p"]["variation"] > outputs["variation_p"]["none"]
    # The noise stops (scancel: the generator logs its end); once the window is quiet the
    # predictor says "none" and the daemon releases the job, well before its skip limit.
    slurm.run(slurm.tool("scancel"), str(noise))
    wait_for(lambda: '"event": "end"' in noise_log.read_text())
    wait_for(lambda: window_mean(live_store) < NOISY / 10, timeout=WINDOW + 60)
    daemon.run_cycle()
    assert not held(slurm, network) and not daemon.journal.job(network).held_by_rush
    release = daemon.journal.decisions(network, "release")[0]
    assert release["status"] == "done" and "limit" not in release["reason"]
    assert daemon.journal.job(network).skips == 2
    assert release["model_outputs"]["variation_class"] == "none", release["model_outputs"]


def test_network_job_released_at_its_skip_limit_while_noise_runs(
    slurm: Any, tmp_path: Path, model: Path, live_store: Path
) -> None:
    start_noise(slurm, tmp_path / "noise.jsonl")
    wait_for(lambda: window_mean(live_store) > NOISY)
    network = slurm.submit("-n", "2", "-t", "5", "--comment=rush:wtype=network", LATER, "--wrap", "sleep 1")
    daemon = daemon_for(slurm, tmp_path, live_store, model, skip_limit=2)
    daemon.run_cycle()
    arrival(slurm)  # an RJMS event: the next cycle counts
    daemon.run_cycle()
    assert held(slurm, network) and daemon.journal.job(network).skips == 2
    daemon.run_cycle()  # the limit: started although the predictor still says "variation"
    assert not held(slurm, network)
    release = daemon.journal.decisions(network, "release")[0]
    assert release["status"] == "done" and "limit reached (2 of 2)" in release["reason"]
    assert window_mean(live_store) > NOISY  # the noise was still on
    slurm.run(slurm.tool("scontrol"), "update", f"JobId={network}", "StartTime=now")
    wait_for(lambda: get_backend("slurm", **slurm.options()).job(network).state in ("RUNNING", "COMPLETED"))
