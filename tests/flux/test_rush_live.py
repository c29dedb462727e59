"""RUSH live on Flux, as the paper deployed it (Nichols et al., IPDPS'22): rush loaded as the
Flux scheduler module (FCFS + EASY) with the *learned* variation predictor and skip-with-limit,
the real noise job and network-sensitive jobs, on a real Flux instance.

The same acceptance as tests/campaign/test_live_hold.py on Slurm: a flagged network job stays
queued while the noise runs and starts when the noise stops, or at its skip limit; a compute
job is not held; the journal keeps each prediction (class, probabilities, what it was read
on). The model is trained in the test on a synthetic campaign where the noise slows network
jobs only (tests/live_rush_common.py), so what it predicts live is deterministic. Everything
else is real: the noise job is collectors/noise.py submitted to Flux (its ``network`` kind,
a loopback TCP stream of ~1 GB/s here), this host's procfs counters are sampled into the
feature store the module's predictor reads, and the module allocates through Flux. The Flux
nodes are fake (one broker, ``resource.config``): the counters are this host's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests import polling
from tests.flux.live_rush import (
    COMPUTE,
    NETWORK,
    decisions,
    journaled_skips,
    noise_event_time,
    skips,
    start_noise,
    state,
)
from tests.flux.module_config import MODULE
from tests.live_rush_common import NOISY, WINDOW, window_mean


def rush_on_flux(start_flux: Any, tmp_path: Path, store: Path, model: Path, skip_limit: int) -> Any:
    """A 1-node, 16-core Flux instance scheduled by rush: FCFS + EASY, the learned predictor."""
    config = tmp_path / "rush.toml"
    # dry_run = false: the module's skips are in effect either way; applying, the journal
    # keeps each job's skip count (a reloaded module goes on counting from it).
    config.write_text(
        f'[daemon]\ncycle_interval = 1\njournal = "{tmp_path / "journal.sqlite"}"\ndry_run = false\n\n'
        f'[policy]\npolicy = "FCFS"\nbackfill = "easy"\nwait_quantum = 0\nskip_limit = {skip_limit}\n\n'
        f'[variation]\nenabled = true\npredictor = "learned"\nstore = "{store}"\nmodel = "{model}"\n\n'
        '[rjms]\nbackend = "flux"\n'
    )
    flux = start_flux(size=1, cores=16)
    flux.use_scheduler(str(MODULE), f"config={config}")
    return flux


def wait_for(predicate: Any, timeout: float = 90.0, step: float = 0.5) -> Any:
    return polling.wait_for(predicate, timeout, step)


def test_network_job_waits_for_the_noise_to_stop_and_a_compute_job_does_not(
    start_flux: Any, tmp_path: Path, network_model: Path, live_features: Path
) -> None:
    flux = rush_on_flux(start_flux, tmp_path, live_features, network_model, skip_limit=10_000)
    noise_log = tmp_path / "noise.jsonl"
    noise = start_noise(flux, noise_log)
    network = flux.submit("-n2", "-t", "5m", NETWORK, "sleep", "1")
    compute = flux.submit("-n2", "-t", "5m", COMPUTE, "sleep", "1")
    flux.wait_job(compute)  # not held: its workload type does not suffer from this noise
    assert skips(tmp_path, compute) == []
    [started] = decisions(tmp_path, compute, "start")
    assert started["status"] == "done" and started["model_outputs"]["variation_class"] == "none"
    # The network job is skipped pass after pass while the noise runs; Flux keeps it queued.
    wait_for(lambda: len(skips(tmp_path, network)) >= 3)
    assert state(flux, network) == "SCHED"
    for skip in skips(tmp_path, network):
        outputs = skip["model_outputs"]
        assert outputs["variation_class"] == "variation", outputs
        assert outputs["variation_p"]["variation"] > outputs["variation_p"]["none"]
        assert "variability" in skip["reason"]
    # The noise stops (cancelled: the generator logs its end); once the window is quiet the
    # predictor says "none" and the module starts the job, far below its skip limit.
    flux.run("cancel", str(noise))
    wait_for(lambda: noise_event_time(noise_log, "end") is not None)
    flux.run("job", "wait-event", "-t", str(WINDOW + 60), str(network), "start", timeout=WINDOW + 70)
    flux.wait_job(network)
    [start] = decisions(tmp_path, network, "start")
    assert start["status"] == "done" and "limit" not in start["reason"]
    assert start["model_outputs"]["variation_class"] == "none", start["model_outputs"]
    assert start["time"] > noise_event_time(noise_log, "end")
    assert start["id"] > max(d["id"] for d in skips(tmp_path, network))
    [release] = decisions(tmp_path, network, "release")
    assert release["cycle"] == start["cycle"] and "limit" not in release["reason"], release["reason"]
    counted = [d for d in skips(tmp_path, network) if "not counted" not in d["reason"]]
    assert journaled_skips(tmp_path, network) == len(counted) < 10_000
    assert flux.run("jobs", "-no", "{result}", str(network)).stdout.strip() == "COMPLETED"


def test_network_job_starts_at_its_skip_limit_while_the_noise_runs(
    start_flux: Any, tmp_path: Path, network_model: Path, live_features: Path
) -> None:
    flux = rush_on_flux(start_flux, tmp_path, live_features, network_model, skip_limit=3)
    noise_log = tmp_path / "noise.jsonl"
    start_noise(flux, noise_log)
    network = flux.submit("-n2", "-t", "5m", NETWORK, "sleep", "1")
    wait_for(lambda: skips(tmp_path, network))
    # The module's timer passes (every second) keep it held without counting: only Flux's
    # events (a job submitted, a job ended) count a skip, as in Fluxion's loop.
    wait_for(lambda: len(skips(tmp_path, network)) >= 3)
    assert journaled_skips(tmp_path, network) == 1 and state(flux, network) == "SCHED"
    while state(flux, network) == "SCHED":  # other jobs arrive and end: events
        flux.wait_job(flux.submit("-n1", "-t", "1m", COMPUTE, "true"))
    flux.wait_job(network)
    held = skips(tmp_path, network)
    assert all(d["model_outputs"]["variation_class"] == "variation" for d in held)
    assert all(d["status"] == "done" for d in held) and journaled_skips(tmp_path, network) == 3
    counted = [d for d in held if "not counted" not in d["reason"]]
    assert [d["value"] for d in counted] == [1.0, 2.0, 3.0] and len(held) > len(counted)
    # At the limit the job is released and started in the same pass.
    [release] = decisions(tmp_path, network, "release")
    assert "skip limit reached (3 of 3)" in release["reason"], release["reason"]
    [start] = decisions(tmp_path, network, "start")
    assert start["status"] == "done" and start["cycle"] == release["cycle"]
    # Started although the predictor still says "variation": the noise was on throughout.
    assert start["model_outputs"]["variation_class"] == "variation"
    assert noise_event_time(noise_log, "off") is None and noise_event_time(noise_log, "end") is None
    assert window_mean(tmp_path / "features.sqlite") > NOISY
