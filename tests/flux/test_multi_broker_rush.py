"""RUSH live on a Flux instance of four brokers (``flux start --test-size=4``, each a fake node of
four cores) with the noise on one of them: rush is the scheduler module (FCFS + EASY, first fit,
skip-with-limit) with a learned predictor on the nodes a job would get.

What one fake node cannot show: the noise job (collectors/noise.py, network kind) runs on one
broker; a two-node network job whose placement includes that broker is flagged and kept queued,
while a later network job placed on quiet brokers starts at once; the flagged job starts on the
nodes it was flagged on once the noise stops, or at its skip limit, its skips counted only on
Flux's events (rush/core/skip_with_limit.counts_skips). The per-node counter is real: the CPU
the processes of each broker's jobs use (tests/flux/broker_tasks.py), sampled every second into
the feature store the module reads; the model is trained in the test (tests/flux/broker_model.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rush.campaign.runner import Sampler
from rush.collect.store import FeatureStore
from rush.rjms.flux import expand_hostlist
from tests import polling
from tests.flux.broker_model import BUSY, IDLE, NODES, WINDOW, node_window, train_model
from tests.flux.broker_tasks import BrokerTasks
from tests.flux.live_rush import (
    NETWORK,
    decisions,
    journaled_skips,
    noise_event_time,
    skips,
    state,
    submit_noise,
)
from tests.flux.module_config import MODULE
from tests.flux.module_config import decisions as all_decisions


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dataset_mod = pytest.importorskip("rush.models.variability.dataset", reason="the dataset builder absent")
    train_mod = pytest.importorskip("rush.models.variability.train", reason="the training absent")
    return train_model(tmp_path_factory.mktemp("broker-model"), dataset_mod, train_mod)


@pytest.fixture
def brokers(start_flux: Any, tmp_path: Path, model: Path) -> Iterator[Any]:
    """Four brokers, their job-process counters sampled into a store, rush as the scheduler."""
    flux = start_flux(size=len(NODES), cores=4)
    store = FeatureStore(tmp_path / "features.sqlite")
    sampler = Sampler(store, threading.Lock(), [BrokerTasks(flux)], interval=1.0)
    sampler.start()
    try:
        yield flux
    finally:
        sampler.stop()
        store.close()


def load_rush(flux: Any, tmp_path: Path, model: Path, skip_limit: int) -> None:
    config = tmp_path / "rush.toml"
    config.write_text(
        f'[daemon]\ncycle_interval = 1\njournal = "{tmp_path / "journal.sqlite"}"\ndry_run = false\n\n'
        f'[policy]\npolicy = "FCFS"\nbackfill = "easy"\nwait_quantum = 0\nskip_limit = {skip_limit}\n\n'
        f'[variation]\nenabled = true\npredictor = "learned"\nstore = "{tmp_path / "features.sqlite"}"\n'
        f'model = "{model}"\n\n[rjms]\nbackend = "flux"\n'
    )
    # Loading imports numba and the model: slow on a loaded machine, hence the long timeout.
    flux.module("remove", "sched-simple")
    flux.run("module", "load", str(MODULE), f"config={config}", timeout=300)


def wait_for(predicate: Any, timeout: float = 90.0, journal: Path | None = None) -> Any:
    """``predicate`` true within ``timeout``; on failure the message lists the journal's decisions."""
    try:
        return polling.wait_for(predicate, timeout, 0.5)
    except AssertionError:
        if journal is None:
            raise
        rows = [
            f"{d['cycle']} {d['job_id']} {d['action']} {d['status']} {d['reason'][:80]} {d['model_outputs'][:200]}"
            for d in all_decisions(journal)
        ]
        raise AssertionError("condition not reached in time; decisions:\n" + "\n".join(rows)) from None


def nodes_of(flux: Any, job_id: int) -> list[str]:
    return expand_hostlist(flux.run("jobs", "-no", "{nodelist}", str(job_id)).stdout.strip())


def start_noise(flux: Any, tmp_path: Path) -> tuple[int, str, Path]:
    """The network noise as a one-node Flux job (no workload type: never predicted); rush's
    first fit puts it on node0. Returns its id, its node and its log once its node is busy."""
    log = tmp_path / "noise.jsonl"
    job_id = submit_noise(flux, log, "-N1")
    flux.run("job", "wait-event", "-t", "60", str(job_id), "start", timeout=70)
    wait_for(lambda: noise_event_time(log, "on") is not None)
    [node] = nodes_of(flux, job_id)
    assert node == "node0"  # first fit: lowest node ids first
    store = tmp_path / "features.sqlite"
    on = noise_event_time(log, "on")
    assert on is not None
    # The whole window sees it: on for longer than the window, busy on average.
    wait_for(lambda: time.time() > on + WINDOW and node_window(store, node) > BUSY, WINDOW + 90)
    assert all(node_window(store, other) < IDLE for other in NODES if other != node)
    return job_id, node, log


def test_a_job_placed_on_the_noisy_broker_waits_and_one_on_quiet_brokers_starts(
    brokers: Any, tmp_path: Path, model: Path
) -> None:
    flux = brokers
    load_rush(flux, tmp_path, model, skip_limit=10_000)
    noise, loud, log = start_noise(flux, tmp_path)
    # First in line: two one-core slots on two nodes; first fit gives it node0 (the noise's) and node1.
    flagged = flux.submit("-N2", "-n2", "-t", "5m", NETWORK, "sleep", "1")
    # Second: two whole nodes, which only quiet brokers have.
    quiet = flux.submit("-N2", "-n2", "--exclusive", "-t", "5m", NETWORK, "sleep", "1")
    flux.wait_job(quiet)
    assert loud not in nodes_of(flux, quiet) and len(nodes_of(flux, quiet)) == 2
    [started] = decisions(tmp_path, quiet, "start")
    assert started["status"] == "done" and started["model_outputs"]["variation_class"] == "none"
    assert loud not in started["model_outputs"]["variation_nodes"].split(",")
    # The first job is skipped pass after pass, predicted on the nodes it would get.
    wait_for(lambda: len(skips(tmp_path, flagged)) >= 3, journal=tmp_path)
    assert state(flux, flagged) == "SCHED"
    held = skips(tmp_path, flagged)
    for skip in held:
        outputs = skip["model_outputs"]
        assert outputs["variation_class"] == "variation", outputs
        # Its first-fit placement: node0 and node1, or node0 and node3 while the other job holds
        # node1 and node2 whole; the noise's broker is in every one.
        assert loud in outputs["variation_nodes"].split(",") and "variability" in skip["reason"]
    # The noise stops: once the window is quiet the job starts, on the nodes it waited for.
    flux.run("cancel", str(noise))
    wait_for(lambda: noise_event_time(log, "end") is not None)
    flux.run("job", "wait-event", "-t", str(WINDOW + 60), str(flagged), "start", timeout=WINDOW + 70)
    flux.wait_job(flagged)
    assert nodes_of(flux, flagged) == [loud, "node1"]
    [start] = decisions(tmp_path, flagged, "start")
    assert start["status"] == "done" and "limit" not in start["reason"]
    # No longer flagged: its P(variation) fell below the model's rule as the window quieted.
    outputs = start["model_outputs"]
    assert outputs["variable"] is False and outputs["variation_nodes"] == f"{loud},node1", outputs
    assert outputs["variation_p"]["variation"] < min(
        d["model_outputs"]["variation_p"]["variation"] for d in held
    )
    assert start["time"] > noise_event_time(log, "end")
    # Start order: the later job on quiet brokers first, the flagged one after the noise.
    runs = {int(j["id"]): j["t_run"] for j in flux.jobs() if "t_run" in j}
    assert runs[noise] < runs[quiet] < runs[flagged]
    assert started["id"] < start["id"]
    counted = [d for d in skips(tmp_path, flagged) if "not counted" not in d["reason"]]
    assert journaled_skips(tmp_path, flagged) == len(counted) < 10_000
    assert flux.run("jobs", "-no", "{result}", str(flagged)).stdout.strip() == "COMPLETED"


def test_a_job_on_the_noisy_broker_starts_at_its_skip_limit_counted_on_events(
    brokers: Any, tmp_path: Path, model: Path
) -> None:
    flux = brokers
    load_rush(flux, tmp_path, model, skip_limit=3)
    _, loud, log = start_noise(flux, tmp_path)
    flagged = flux.submit("-N2", "-n2", "-t", "5m", NETWORK, "sleep", "1")
    # The module's timer passes keep it held without counting: its submission was one event.
    wait_for(lambda: len(skips(tmp_path, flagged)) >= 3, journal=tmp_path)
    assert journaled_skips(tmp_path, flagged) == 1 and state(flux, flagged) == "SCHED"
    while state(flux, flagged) == "SCHED":  # other jobs arrive and end: Flux events
        flux.wait_job(flux.submit("-n1", "-t", "1m", "true"))
    flux.wait_job(flagged)
    held = skips(tmp_path, flagged)
    assert all(d["model_outputs"]["variation_class"] == "variation" for d in held)
    assert all(d["model_outputs"]["variation_nodes"] == f"{loud},node1" for d in held)  # first fit
    counted = [d for d in held if "not counted" not in d["reason"]]
    assert [d["value"] for d in counted] == [1.0, 2.0, 3.0] and len(held) > len(counted)
    assert journaled_skips(tmp_path, flagged) == 3
    [release] = decisions(tmp_path, flagged, "release")
    assert "skip limit reached (3 of 3)" in release["reason"], release["reason"]
    [start] = decisions(tmp_path, flagged, "start")
    assert start["status"] == "done" and start["cycle"] == release["cycle"]
    # Started on the noisy broker although the predictor still flags it: the noise never stopped.
    assert start["model_outputs"]["variation_class"] == "variation"
    assert nodes_of(flux, flagged) == [loud, "node1"]
    assert noise_event_time(log, "off") is None and noise_event_time(log, "end") is None
    assert node_window(tmp_path / "features.sqlite", loud) > BUSY
