"""Loading Fluxion into a test instance (tests/flux/fluxion.py's ``use_fluxion``): it returns
with the queue ready, and a step that fails or does not answer is reported with what the
broker shows (``flux module list``, ``flux dmesg``, the instance's log, the broker's threads),
never as a bare timeout of ``flux module load``.
"""

from __future__ import annotations

import os
import signal

import pytest

from tests.flux import fluxion

pytestmark = pytest.mark.flux


@pytest.fixture
def instance(start_flux):
    why = fluxion.unavailable()
    if why:
        pytest.skip(why)
    return start_flux(size=1, cores=16)


def test_use_fluxion_returns_with_the_queue_ready_and_no_other_scheduler(instance):
    processes = instance.module_processes()
    assert "sched-simple" in processes.values()  # flux-core's Python scheduler, run as a process
    fluxion.use_fluxion(instance, queue_policy="easy", match_policy="lonodex")
    assert not processes.keys() & instance.module_processes().keys()  # torn down by the broker
    loaded = instance.modules()
    assert [name for name, services in loaded.items() if "sched" in services] == ["sched-fluxion-qmanager"]
    assert "sched-simple" not in loaded and "sched-fluxion-resource" in loaded
    # Both modules are in their reactors: their start-up (graph, handshakes) is over.
    stats = instance.module("stats", "sched-fluxion-qmanager", timeout=10).stdout
    assert '"policy": "easy"' in stats
    job = instance.submit("-N1", "true")
    instance.wait_job(job, timeout=60)


def test_a_fluxion_module_that_fails_to_start_is_reported_with_the_brokers_log(instance):
    with pytest.raises(fluxion.FluxionLoadError) as failed:
        fluxion.use_fluxion(instance, queue_policy="easy", match_policy="no-such-match")
    message = str(failed.value)
    assert "flux module load" in message and "sched-fluxion-resource.so" in message
    assert "--- flux module list" in message and "--- flux dmesg" in message
    assert "Unknown match policy (no-such-match)" in message  # the module's own words, from dmesg


def test_a_broker_that_does_not_answer_is_reported_within_the_bound_with_its_threads(instance):
    (broker,) = instance.broker_pids()
    os.kill(broker, signal.SIGSTOP)  # our own instance's broker, by its PID
    try:
        with pytest.raises(fluxion.FluxionLoadError) as failed:
            fluxion.use_fluxion(instance, queue_policy="easy", timeout=3)
    finally:
        os.kill(broker, signal.SIGCONT)
    message = str(failed.value)
    assert "no answer in 3 s" in message
    assert "the broker does not answer requests" in message  # flux module list and flux dmesg
    assert "--- broker threads" in message
