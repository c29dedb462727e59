"""The Flux backend against a FAKE Flux handle: no Flux broker can run here (flux-core is not
packaged for this machine). The fake answers the RPCs rush sends with the payloads flux-core
documents (job-list.list, sched.resource-status with R version 1, job-info.lookup,
job-manager.urgency, job-manager.raise) and fails like Flux (OSError with an errno)."""

from __future__ import annotations

import errno
import json

import pytest

from rush.core.priority_values import MAX_VALUE
from rush.errors import BackendUnavailableError, RJMSError
from rush.rjms.base import get_backend
from rush.rjms.flux import (
    STATE_INACTIVE,
    STATE_RUN,
    STATE_SCHED,
    FluxBackend,
    build_jobspec,
    count_cores,
    urgency_for,
)


def r_v1(ranks: str, cores: str) -> dict:
    return {"version": 1, "execution": {"R_lite": [{"rank": ranks, "children": {"core": cores}}]}}


class Future:
    def __init__(self, answer: dict | None = None, error: OSError | None = None) -> None:
        self.answer, self.error = answer, error

    def get(self) -> dict | None:
        if self.error:
            raise self.error
        return self.answer


class FakeFlux:
    """Four ranks of 16 cores; job 101 runs on rank 0 (16 cores), 102 and 103 wait."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.jobs = {
            101: {
                "id": 101,
                "userid": 1000,
                "urgency": 16,
                "priority": 16,
                "t_submit": 100.0,
                "t_run": 110.0,
                "state": STATE_RUN,
                "name": "lmp",
                "ntasks": 16,
                "ncores": 16,
                "duration": 3600.0,
            },
            102: {
                "id": 102,
                "userid": 1001,
                "urgency": 16,
                "priority": 16,
                "t_submit": 120.0,
                "state": STATE_SCHED,
                "name": "io",
                "ntasks": 8,
                "ncores": 8,
                "duration": 0.0,
            },
            103: {
                "id": 103,
                "userid": 1001,
                "urgency": 16,
                "priority": 16,
                "t_submit": 130.0,
                "state": STATE_SCHED,
                "name": "old",
                "ntasks": 2,
            },
        }
        self.jobspecs = {
            101: {
                "attributes": {"system": {"duration": 3600, "rush": {"idempotent": 1, "wtype": "network"}}}
            },
            102: {"attributes": {"system": {"duration": 0}}},
            103: {"attributes": {"system": {"duration": 600}}},  # an older job-list without "duration"
        }
        self.down = False

    def rpc(self, topic: str, payload: dict) -> Future:
        self.calls.append((topic, payload))
        if self.down:
            return Future(error=OSError(errno.ECONNRESET, "Connection reset by peer"))
        if topic == "job-list.list":
            mask = payload["constraint"]["states"][0]
            assert payload["attrs"] == ["all"]
            return Future({"jobs": [dict(j) for j in self.jobs.values() if j["state"] & mask]})
        if topic == "sched.resource-status":
            return Future({"all": r_v1("0-3", "0-15"), "allocated": r_v1("0", "0-15"), "down": None})
        job = self.jobs.get(payload.get("id"))
        if job is None:
            return Future(error=OSError(errno.ENOENT, "unknown job id"))
        if topic == "job-info.lookup":
            return Future({"id": job["id"], "jobspec": json.dumps(self.jobspecs[job["id"]])})
        if topic == "job-manager.urgency":
            old, job["urgency"] = job["urgency"], payload["urgency"]
            return Future({"old_urgency": old})
        if topic == "job-manager.raise":
            job["state"] = STATE_INACTIVE
            return Future(None)
        return Future(error=OSError(errno.ENOSYS, "Function not implemented"))


def test_missing_bindings_say_what_to_install():
    with pytest.raises(BackendUnavailableError, match="Python bindings") as err:
        get_backend("flux")
    assert err.value.fix and "flux-core" in err.value.fix


def test_read_state_from_documented_payloads():
    fake = FakeFlux()
    state = FluxBackend(handle=fake).read_state()
    assert state.total_procs == 64 and state.free_procs == 48
    jobs = {j.job_id: j for j in state.jobs}
    assert jobs[101].state == "RUNNING" and jobs[101].start == 110.0 and jobs[101].procs == 16
    assert jobs[101].tags == {"idempotent": "1", "wtype": "network"} and jobs[101].requested_time == 3600
    assert jobs[102].state == "PENDING" and jobs[102].requested_time == float("inf")
    assert jobs[103].requested_time == 600 and jobs[103].procs == 2  # from the jobspec, from ntasks
    # The jobspec is looked up once per job, not on every read.
    backend = FluxBackend(handle=fake)
    backend.read_state()
    backend.read_state()
    assert sum(1 for topic, p in fake.calls if topic == "job-info.lookup" and p["id"] == 101) == 2


def test_priority_hold_release_cancel():
    fake = FakeFlux()
    backend = FluxBackend(handle=fake)
    band = MAX_VALUE // 3
    levels = [urgency_for(s) for s in (0, 1, band, band + 1, 2 * band + 1, MAX_VALUE, 2**31)]
    assert levels == [1, 1, 10, 11, 21, 30, 30]
    assert backend.set_priority(102, band + 1).ok and fake.jobs[102]["urgency"] == 11
    assert backend.hold(102).ok and fake.jobs[102]["urgency"] == 0
    assert {j.job_id: j.held for j in backend.read_state().jobs}[102]
    # A priority change while held waits for the release instead of releasing the job.
    assert backend.set_priority(102, 2 * band + 1).ok and fake.jobs[102]["urgency"] == 0
    assert backend.release(102).ok and fake.jobs[102]["urgency"] == 21
    assert backend.cancel(103).ok and 103 not in {j.job_id for j in backend.read_state().jobs}
    refused = backend.requeue(101, {"class": "large"})
    assert not refused.ok and "cannot requeue" in refused.answer
    unknown = backend.set_priority(999, 5)
    assert not unknown.ok and "unknown job id" in unknown.answer
    with pytest.raises(RJMSError, match="invalid job id"):
        backend.hold(-1)


def test_broker_down_is_an_rjms_error():
    fake = FakeFlux()
    fake.down = True
    with pytest.raises(RJMSError, match="Connection reset") as err:
        FluxBackend(handle=fake).read_state()
    assert "flux ping" in err.value.fix


def test_jobspec_follows_rfc25():
    spec = build_jobspec(name="probe", procs=4, time_limit=90, command=["hostname"], begin=5.0, cwd="/tmp")
    assert spec["version"] == 1
    assert spec["resources"] == [
        {"type": "slot", "count": 4, "label": "task", "with": [{"type": "core", "count": 1}]}
    ]
    assert spec["tasks"] == [{"command": ["hostname"], "slot": "task", "count": {"per_slot": 1}}]
    system = spec["attributes"]["system"]
    assert system["duration"] == 90 and system["job"] == {"name": "probe"} and system["cwd"] == "/tmp"
    assert system["dependencies"] == [{"scheme": "begin-time", "value": 5.0}]
    assert count_cores(r_v1("0-1,5", "[0-3]")) == 12 and count_cores(None) == 0
