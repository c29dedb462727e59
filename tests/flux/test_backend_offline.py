"""The Flux backend where a live instance cannot show it: no bindings installed, an older
flux-core's payloads, and pure functions (urgency compression, jobspec, R).

Everything else (reads, priorities through the plugin and urgency, hold and release,
cancels) is tested against real instances in this directory. The one FAKE here is the
handle of :func:`test_older_job_list_payloads`: it answers like a flux-core whose job-list
has no ``priority`` or ``duration`` attributes, which the vendored 0.88 cannot do.
"""

from __future__ import annotations

import json
import sys

import pytest

from rush.core.priority_values import MAX_VALUE
from rush.errors import BackendUnavailableError, RJMSError
from rush.rjms.base import get_backend
from rush.rjms.flux import (
    STATE_INACTIVE,
    STATE_RUN,
    STATE_SCHED,
    FluxBackend,
    JobSubmission,
    build_jobspec,
    count_cores,
    urgency_for,
)


def r_v1(ranks: str, cores: str) -> dict:
    return {"version": 1, "execution": {"R_lite": [{"rank": ranks, "children": {"core": cores}}]}}


def test_missing_bindings_say_what_to_install(monkeypatch):
    for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "flux", None)  # import flux -> ImportError, as without flux-core
    with pytest.raises(BackendUnavailableError, match="Python bindings") as err:
        get_backend("flux")
    assert err.value.fix and "flux-core" in err.value.fix and "not the unrelated PyPI" in err.value.fix


def test_urgency_compression_is_monotone_over_rush_values():
    band = MAX_VALUE // 3
    levels = [urgency_for(s) for s in (0, 1, band, band + 1, 2 * band + 1, MAX_VALUE, 2**31)]
    assert levels == [1, 1, 10, 11, 21, 30, 30]  # never 0 (hold) nor 31 (expedite)


class Future:
    def __init__(self, answer: dict) -> None:
        self.answer = answer

    def get(self) -> dict:
        return self.answer


class OldJobList:
    """A flux-core whose job-list lists neither ``priority`` nor ``duration``."""

    def rpc(self, topic: str, payload: dict) -> Future:
        if topic == "job-list.list":
            return Future(
                {
                    "jobs": [
                        {"id": 7, "state": STATE_SCHED, "urgency": 0, "t_submit": 5.0, "ntasks": 2},
                        {
                            "id": 8,
                            "state": STATE_RUN,
                            "urgency": 16,
                            "t_submit": 6.0,
                            "t_run": 9.0,
                            "ncores": 4,
                        },
                    ]
                }
            )
        if topic == "sched.resource-status":
            return Future({"all": r_v1("0-1", "0-3"), "allocated": r_v1("0", "0-3")})
        if topic == "job-info.lookup":
            spec = {"attributes": {"system": {"duration": 600 if payload["id"] == 7 else 0}}}
            return Future({"id": payload["id"], "jobspec": json.dumps(spec)})
        raise OSError(38, "Function not implemented")


def test_older_job_list_payloads():
    state = FluxBackend(handle=OldJobList()).read_state()
    jobs = {j.job_id: j for j in state.jobs}
    assert state.total_procs == 8 and state.free_procs == 4
    # The jobspec's duration stands in for job-list's; the urgency for the priority.
    assert jobs[7].requested_time == 600 and jobs[7].procs == 2 and jobs[7].held and jobs[7].site_factor == 0
    assert jobs[8].requested_time == float("inf") and jobs[8].start == 9.0 and jobs[8].site_factor == 16


class EndedJobs:
    """Two finished jobs: 5 ran on brokers 1 and 3 (named by its R), 6 never ran; R lookups counted."""

    def __init__(self) -> None:
        self.lookups = 0

    def rpc(self, topic: str, payload: dict) -> Future:
        if topic == "job-list.list-id":
            job = {
                "id": payload["id"],
                "state": STATE_INACTIVE,
                "t_submit": 1.0,
                "t_inactive": 9.0,
                "result": 0,
            }
            if payload["id"] == 5:
                job |= {"t_run": 2.0, "t_cleanup": 8.0}
            return Future({"job": job})
        if topic == "job-info.lookup" and payload["keys"] == ["R"]:
            self.lookups += 1
            r = {"version": 1, "execution": {"R_lite": [{"rank": "1,3", "children": {"core": "0"}}],
                                              "nodelist": ["node[1,3]"]}}  # fmt: skip
            return Future({"id": payload["id"], "R": json.dumps(r)})
        raise OSError(38, "Function not implemented")


def test_accounting_names_the_nodes_and_ranks_of_the_jobs_r():
    handle = EndedJobs()
    backend = FluxBackend(handle=handle)
    ran, never = backend.accounting([5, 6])
    assert ran["nodes"] == ["node1", "node3"] and ran["ranks"] == [1, 3] and ran["start"] == 2.0
    assert "nodes" not in never and never["start"] is None
    backend.accounting([5])
    assert handle.lookups == 1  # a finished job's R is read once


def test_jobspec_follows_rfc25():
    spec = build_jobspec(JobSubmission("probe", 4, 90, ["hostname"], begin=5.0, cwd="/tmp"))
    assert spec["version"] == 1
    assert spec["resources"] == [
        {"type": "slot", "count": 4, "label": "task", "with": [{"type": "core", "count": 1}]}
    ]
    assert spec["tasks"] == [{"command": ["hostname"], "slot": "task", "count": {"per_slot": 1}}]
    system = spec["attributes"]["system"]
    assert system["duration"] == 90 and system["job"] == {"name": "probe"} and system["cwd"] == "/tmp"
    assert system["dependencies"] == [{"scheme": "begin-time", "value": 5.0}]
    assert count_cores(r_v1("0-1,5", "[0-3]")) == 12 and count_cores(None) == 0


def test_batch_jobspec_runs_the_command_once_on_the_first_node():
    """A batch job holds every core and runs its command once (as an sbatch script): one shell
    task per node, only task 0 executes, output discarded; the command's words stay intact."""
    import subprocess

    from rush.rjms.flux import BATCH_GUARD

    spec = build_jobspec(JobSubmission("b", 8, 60, ["echo", "a b", "$HOME"]), batch=True)
    assert spec["resources"][0]["count"] == 8
    task = spec["tasks"][0]
    assert task["command"][:4] == ["sh", "-c", BATCH_GUARD, "rush-batch"]
    assert task["command"][4:] == ["echo", "a b", "$HOME"]
    shell = spec["attributes"]["system"]["shell"]["options"]
    assert shell["per-resource"] == {"type": "node", "count": 1}
    assert shell["output"]["stdout"]["path"] == "/dev/null"
    # The idle nodes' tasks exit at once; the shell's exit-timeout (30 s by default) would then
    # kill a multi-node batch job 30 s after its start (seen live: 4-node replay jobs cut to 30 s).
    assert shell["exit-timeout"] == "none"
    # The guard itself, run by sh as the Flux shell would: rank 0 runs the command, others do not.
    env = {"PATH": "/usr/bin:/bin"}
    ran = subprocess.run(task["command"], capture_output=True, text=True, env={**env, "FLUX_TASK_RANK": "0"})
    assert ran.stdout == "a b $HOME\n"
    idle = subprocess.run(task["command"], capture_output=True, text=True, env={**env, "FLUX_TASK_RANK": "3"})
    assert idle.stdout == "" and idle.returncode == 0
    assert "shell" not in build_jobspec(JobSubmission("t", 2, 60, ["true"]))["attributes"]["system"]


def test_a_node_count_gives_a_node_level_the_core_reads_back():
    """``nodes``: the job spans that many nodes (``flux batch -N2 -n3``): slots of one core
    under a node vertex, ceil(procs / nodes) per node; what rush's request model reads back."""
    from rush.core.resources import Request
    from rush.rjms.flux import request_from_jobspec

    spec = build_jobspec(JobSubmission("b", 3, 60, ["true"], nodes=2), batch=True)
    slot = {"type": "slot", "count": 2, "label": "task", "with": [{"type": "core", "count": 1}]}
    assert spec["resources"] == [{"type": "node", "count": 2, "with": [slot]}]
    assert request_from_jobspec(spec) == Request(nodes=2, cores_per_node=2)
    assert spec["attributes"]["system"]["shell"]["options"]["per-resource"] == {"type": "node", "count": 1}
    for bad in (0, 4):
        with pytest.raises(ValueError, match="nodes for 3 processes"):
            build_jobspec(JobSubmission("b", 3, 60, ["true"], nodes=bad), batch=True)
    backend = FluxBackend(handle=object())
    assert backend.capabilities.submits_node_counts
    for bad_count in (0, 5, True, 1.5):
        with pytest.raises(RJMSError, match="invalid node count"):
            backend.submit(name="b", procs=4, time_limit=60, command=["true"], nodes=bad_count)


def test_comment_tags_become_system_rush_attributes():
    from rush.rjms.flux import comment_tags

    assert comment_tags("rush:app=halo,wtype=network;optin") == {
        "app": "halo",
        "wtype": "network",
        "optin": "1",
    }
    assert comment_tags("another tool's comment") == {}
    assert comment_tags("rush:") == {}
    long = comment_tags("rush:" + "k" * 100 + "=" + "v" * 1000)
    assert [len(k) for k in long] == [64] and [len(v) for v in long.values()] == [256]
    spec = build_jobspec(JobSubmission("c", 1, 60, ["true"], comment="rush:wtype=io"))
    assert spec["attributes"]["system"]["rush"] == {"wtype": "io", "comment": "rush:wtype=io"}


def test_result_names():
    from rush.rjms.flux import result_name

    assert [result_name(r) for r in (1, 2, 4, 8)] == ["COMPLETED", "FAILED", "CANCELED", "TIMEOUT"]
    assert result_name("COMPLETED") == "COMPLETED" and result_name(None) == "" and result_name(16) == "16"


def test_gpu_slots_outnumbering_the_nodes_read_as_fluxion_packs_them():
    """Under Fluxion, slots with GPUs and no node level, more than the nodes that can hold one
    (``sizes``: the nodes' cores and GPUs), read as those nodes with room for their share; as
    many slots as nodes, or flux-core's pool, or no sizes: one node per slot, as before."""
    from rush.core.resources import Request
    from rush.rjms.flux import request_from_jobspec

    def spec(slots: int, exclusive: bool = False) -> dict:
        inside = [{"type": "core", "count": 1}, {"type": "gpu", "count": 1}]
        slot = {"type": "slot", "count": slots, "label": "task", "with": inside, "exclusive": exclusive}
        return {"version": 1, "resources": [slot], "tasks": [], "attributes": {"system": {}}}

    two = ((4, 2), (4, 2))
    assert request_from_jobspec(spec(3), fluxion=True, sizes=two) == Request(2, 2, 2)
    assert request_from_jobspec(spec(5, exclusive=True), fluxion=True, sizes=two) == Request(2, 3, 3)
    # Only the nodes that can hold a slot count (a node without GPUs cannot).
    assert request_from_jobspec(spec(3), fluxion=True, sizes=((8, 0), *two)) == Request(2, 2, 2)
    assert request_from_jobspec(spec(2), fluxion=True, sizes=two) == Request(2, 1, 1)
    assert request_from_jobspec(spec(3), fluxion=True) == Request(3, 1, 1)
    assert request_from_jobspec(spec(3), sizes=two) == Request(3, 1, 1)


def test_gpu_slots_read_with_the_sizes_of_the_jobs_queue():
    """A multi-queue instance (``queue_sizes``: each queue's nodes): a job of a listed queue
    packs its GPU slots by its queue's nodes, not the instance's; a job of another queue, or
    none, by all of them."""
    from rush.core.resources import Request
    from rush.rjms.flux import queue_requirements, request_from_jobspec

    def spec(queue: str) -> dict:
        slot = {"type": "slot", "count": 2, "label": "task", "with": [{"type": "core", "count": 1}, {"type": "gpu", "count": 1}]}  # fmt: skip
        return {"version": 1, "resources": [slot], "tasks": [], "attributes": {"system": {"queue": queue}}}

    every, by_queue = ((4, 2), (4, 2)), {"batch": ((4, 2),), "gpu": ((4, 2),)}
    assert request_from_jobspec(spec("gpu"), fluxion=True, sizes=every) == Request(2, 1, 1, False, "gpu")
    got = request_from_jobspec(spec("gpu"), fluxion=True, sizes=every, queue_sizes=by_queue)
    assert got == Request(1, 2, 2, False, "gpu")
    got = request_from_jobspec(spec("debug"), fluxion=True, sizes=every, queue_sizes=by_queue)
    assert got == Request(2, 1, 1, False, "debug")
    # The instance's configuration as config.get answers it.
    config = {"queues": {"batch": {"requires": ["batch"]}, "gpu": {"requires": ["gpu"]}, "all": {}}}
    assert queue_requirements(config) == {"batch": ["batch"], "gpu": ["gpu"], "all": []}
    assert queue_requirements({"queues": "x"}) == queue_requirements(None) == {}


@pytest.mark.parametrize(
    "jobspec",
    [
        {"attributes": []},
        {"attributes": "x"},
        {"attributes": {"system": 5}},
        {"attributes": {"system": {"rush": []}}},
    ],
    ids=["attributes-list", "attributes-string", "system-number", "rush-list"],
)
def test_jobspec_tags_of_a_malformed_jobspec_are_none(jobspec):
    """Found by fuzzing: a non-object ``attributes`` raised AttributeError out of jobspec_tags."""
    from rush.rjms.flux.jobspec import jobspec_tags

    assert jobspec_tags(jobspec) == {}
