"""The Flux backend keeps each job between reads (round 28, r31flux): a read equals a new
backend's read of the same answers, field by field (types and float signs included), and an
unchanged job is the same object as in the last read.

The handle here is a FAKE broker (answers as JSON text, decoded at ``get()`` as flux's
``RPC.get`` does, so every read gets new record objects): what a live instance cannot be
made to do on demand (look-alike values, a scheduler module swapped under a running daemon,
nodes resized between two reads). The answers' shapes are flux-core 0.88's
(``benchmarks/flux_answers.py`` says where they were recorded).
"""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest

from rush.errors import RJMSError
from rush.rjms.flux import STATE_RUN, STATE_SCHED, FluxBackend
from rush.rjms.flux.backend import JOB_LIST_FIELDS


def slot_job(cores: int) -> dict[str, Any]:
    """``flux submit -n1 -c cores``: one slot."""
    return {
        "resources": [
            {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": cores}]}
        ]
    }


def nodes_in_slot() -> dict[str, Any]:
    """``slot[1] > node[2] > core[1]``: two whole nodes under Fluxion, two cores on two nodes
    under flux-core's pool (the scheduler module changes how it is read)."""
    node = {"type": "node", "count": 2, "with": [{"type": "core", "count": 1}]}
    return {"resources": [{"type": "slot", "count": 1, "label": "task", "with": [node]}]}


def gpu_slots() -> dict[str, Any]:
    """``slot[3] > (core[1], gpu[1])``: Fluxion packs the slots on fewer nodes when fewer
    than three nodes have a GPU (the node sizes change how it is read)."""
    inner = [{"type": "core", "count": 1}, {"type": "gpu", "count": 1}]
    return {"resources": [{"type": "slot", "count": 3, "label": "task", "with": inner}]}


def r_of(ranks: list[int], cores: str, gpus: str = "") -> dict[str, Any]:
    children = {"core": cores, **({"gpu": gpus} if gpus else {})}
    return {
        "version": 1,
        "execution": {"R_lite": [{"rank": ",".join(map(str, ranks)), "children": children}]},
    }


class Future:
    def __init__(self, text: str) -> None:
        self.text = text

    def get(self) -> Any:
        return json.loads(self.text)


class Broker:
    """A fake broker's state: job-list records, jobspecs, Rs, the sched module, the nodes."""

    def __init__(self) -> None:
        self.records: dict[int, dict[str, Any]] = {}
        self.specs: dict[int, dict[str, Any]] = {}
        self.rs: dict[int, dict[str, Any]] = {}
        self.sched = "sched-simple"
        self.gpu_nodes = 2  # nodes 0..gpu_nodes-1 have 2 GPUs; 4 nodes of 8 cores

    def queue(self, job_id: int, spec: dict[str, Any], **record: Any) -> None:
        self.specs[job_id] = {**spec, "attributes": {"system": {"duration": 600.0}}, "version": 1}
        self.records[job_id] = {
            "id": job_id, "userid": 5, "urgency": 16, "priority": 16, "t_submit": 100.0 + job_id,
            "t_depend": 100.1 + job_id, "state": STATE_SCHED, "name": f"j{job_id}", "ntasks": 1,
            "ncores": 1, "duration": 600.0, **record,
        }  # fmt: skip

    def start(self, job_id: int, rank: int, cores: str) -> None:
        self.rs[job_id] = r_of([rank], cores)
        self.records[job_id].update(state=STATE_RUN, t_run=500.0, ranks=str(rank), nodelist=f"node{rank}")

    def answer(self, topic: str, payload: dict[str, Any]) -> Any:
        if topic == "job-list.list":
            return {"jobs": list(self.records.values())}
        if topic == "sched.resource-status":
            ranks = list(range(4))
            everything = {"version": 1, "execution": {"R_lite": [
                {"rank": ",".join(map(str, ranks[: self.gpu_nodes])), "children": {"core": "0-7", "gpu": "0-1"}},
                {"rank": ",".join(map(str, ranks[self.gpu_nodes :])), "children": {"core": "0-7"}},
            ], "nodelist": ["node[0-3]"]}}  # fmt: skip
            lite = [e for r in self.rs.values() for e in r["execution"]["R_lite"]]
            return {"all": everything, "allocated": {"version": 1, "execution": {"R_lite": lite}}}
        if topic == "module.list":
            return {"mods": [{"name": self.sched, "services": ["sched"]}]}
        if topic == "job-info.lookup":
            job_id = payload["id"]
            if job_id not in self.specs:
                raise OSError(2, "No such file or directory")
            if payload["keys"] == ["R"]:
                return {"id": job_id, "R": json.dumps(self.rs[job_id])}
            return {"id": job_id, "jobspec": json.dumps(self.specs[job_id])}
        if topic == "job-manager.urgency":
            record = self.records[payload["id"]]
            old, record["urgency"] = record["urgency"], payload["urgency"]
            record["priority"] = payload["urgency"]
            return {"old_urgency": old}
        if topic == "job-manager.update":
            duration = payload["updates"]["attributes.system.duration"]
            self.specs[payload["id"]]["attributes"]["system"]["duration"] = duration
            return {}
        raise OSError(38, "Function not implemented")


class Handle:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def attr_get(self, name: str) -> str:
        return "5"

    def rpc(self, topic: str, payload: dict[str, Any]) -> Future:
        return Future(json.dumps(self.broker.answer(topic, payload)))


def exact(job: Any) -> tuple:
    """A job's fields with their types and reprs (1, 1.0 and True differ; so do 0.0 and -0.0)."""
    return tuple(
        (f.name, type(getattr(job, f.name)).__name__, repr(getattr(job, f.name))) for f in fields(job)
    )


def memo(value: float) -> dict[str, Any]:
    return {"annotations": {"user": {"fairshare": value}, "sched": {"t_estimate": 900.0}}}


def broker_with_jobs() -> Broker:
    broker = Broker()
    broker.queue(1, slot_job(2), ncores=2, **memo(0.5))
    broker.queue(2, slot_job(1), **memo(0.25))
    broker.queue(3, nodes_in_slot(), ncores=2, **memo(0.75))
    broker.queue(4, gpu_slots(), ncores=3, ntasks=3, **memo(0.5))
    broker.queue(5, slot_job(4), ncores=4, **memo(0.5))
    broker.queue(6, slot_job(1), **memo(0.125))
    del broker.records[6]["duration"]  # an older job-list: the jobspec's duration stands in
    broker.queue(7, slot_job(2), ncores=2, **memo(0.5))
    broker.start(7, 3, "0-1")
    return broker


def steps(broker: Broker, backend: FluxBackend) -> list[tuple[str, Any]]:
    """(name, change) in order; each change returns the job ids whose read may change (None:
    every job's)."""

    def arrive() -> set[int]:
        broker.queue(8, slot_job(3), ncores=3, **memo(0.5))
        return {8}

    def end() -> set[int]:
        del broker.records[2]
        return set()

    def urgency() -> set[int]:
        broker.records[1].update(urgency=20, priority=20)
        return {1}

    def estimates_move() -> set[int]:  # sched-simple's annotation: _job does not read it
        broker.records[5]["annotations"]["sched"]["t_estimate"] = 1200.0
        return {5} if backend.fairshare else set()

    def fairshare_moves() -> set[int]:
        broker.records[5]["annotations"]["user"]["fairshare"] = 0.625
        return {5} if backend.fairshare else set()

    def hold() -> set[int]:
        assert backend.hold(8).ok
        return {8}

    def release() -> set[int]:
        assert backend.release(8).ok
        return {8}

    def run() -> set[int]:
        broker.start(5, 2, "0-3")
        return {5}

    def look_alike() -> set[int]:  # 5 and 5.0 are equal, their users "5" and "5.0" are not
        broker.records[1]["userid"] = 5.0
        broker.records[8]["t_submit"] = -0.0
        return {1, 8}

    def duration() -> set[int]:
        assert backend.set_time_limit(6, 900.0).ok
        return {6}

    def fluxion() -> None:
        broker.sched = "sched-fluxion-qmanager"
        return None

    def more_gpu_nodes() -> None:
        broker.gpu_nodes = 4
        return None

    return [
        ("nothing", set), ("arrive", arrive), ("end", end), ("urgency", urgency),
        ("estimates move", estimates_move), ("fair-share moves", fairshare_moves), ("hold", hold),
        ("release", release), ("run", run), ("look-alike", look_alike), ("duration", duration),
        ("fluxion", fluxion), ("nothing after fluxion", set), ("more GPU nodes", more_gpu_nodes),
        ("nothing at the end", set),
    ]  # fmt: skip


def fresh_read(broker: Broker, fairshare: bool) -> tuple:
    return tuple(exact(j) for j in FluxBackend(handle=Handle(broker), fairshare=fairshare).read_state().jobs)


@pytest.mark.parametrize("fairshare", [False, True])
def test_a_kept_read_equals_a_new_backends_and_keeps_unchanged_jobs(fairshare):
    broker = broker_with_jobs()
    backend = FluxBackend(handle=Handle(broker), fairshare=fairshare)
    last = {j.job_id: j for j in backend.read_state().jobs}
    seen_new = {}
    for name, change in steps(broker, backend):
        changed = change()
        state = backend.read_state()
        assert tuple(exact(j) for j in state.jobs) == fresh_read(broker, fairshare), name
        jobs = {j.job_id: j for j in state.jobs}
        if changed is not None:
            kept = [i for i in jobs if i in last and i not in changed]
            assert kept and all(jobs[i] is last[i] for i in kept), f"{name}: an unchanged job made anew"
        seen_new[name] = sorted(i for i in jobs if last.get(i) is not jobs[i])
        last = jobs
    # What the steps were for: each changed what it meant to, and the reads saw it.
    assert last[8].held is False and last[8].submit == 0.0 and str(last[8].submit) == "-0.0"
    assert last[1].user == "5.0" and last[1].site_factor == 20 and last[6].requested_time == 900.0
    assert last[5].state == "RUNNING" and last[5].allocation == (("node2", 4, 0),)
    assert last[3].request.nodes == 2 and last[3].request.exclusive  # Fluxion: whole nodes
    assert last[4].request.nodes == 3  # four GPU nodes: no packing
    assert seen_new["hold"] == [8] and seen_new["nothing after fluxion"] == []
    assert seen_new["fair-share moves"] == ([5] if fairshare else [])
    assert last[1].fairshare == (0.5 if fairshare else None)


def test_a_read_that_fails_keeps_the_last_reads_jobs():
    broker = broker_with_jobs()
    backend = FluxBackend(handle=Handle(broker))
    first = {j.job_id: j for j in backend.read_state().jobs}
    broker.queue(9, slot_job(1))
    del broker.specs[9]  # its jobspec cannot be read: the read fails
    with pytest.raises(RJMSError, match="Flux RPC failed"):
        backend.read_state()
    del broker.records[9]
    again = {j.job_id: j for j in backend.read_state().jobs}
    assert all(again[i] is first[i] for i in first)


class Asked(dict):
    """A record that notes every field asked of it."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.asked: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.asked.add(str(key))
        return super().__contains__(key)


@pytest.mark.parametrize("fairshare", [False, True])
def test_a_job_is_made_from_the_listed_fields_only(fairshare):
    """_job reads no record field outside JOB_LIST_FIELDS (and, with fair-share, the
    annotations): otherwise a change there would be missed by the kept read."""
    broker = broker_with_jobs()
    backend = FluxBackend(handle=Handle(broker), fairshare=fairshare)
    backend.read_state()
    asked: set[str] = set()
    for record in broker.records.values():
        noted = Asked(json.loads(json.dumps(record)))
        backend._job(noted)
        asked |= noted.asked
    allowed = set(JOB_LIST_FIELDS) | ({"annotations"} if fairshare else set())
    assert asked <= allowed and "state" in asked and "t_run" in asked


def test_a_first_read_makes_no_keys(monkeypatch):
    """A first read keeps its records; their keys are made when they are next compared."""
    import rush.rjms.flux.backend as flux_backend

    keyed: list[int] = []
    real = flux_backend.record_key

    def counted(record, names):
        keyed.append(record["id"])
        return real(record, names)

    monkeypatch.setattr(flux_backend, "record_key", counted)
    broker = broker_with_jobs()
    backend = FluxBackend(handle=Handle(broker))
    count = len(backend.read_state().jobs)
    assert keyed == []
    backend.read_state()
    assert len(keyed) == 2 * count  # each kept record and its new one, once
    keyed.clear()
    backend.read_state()
    assert len(keyed) == count  # the kept keys are not made again


def test_queue_members_are_the_nodes_with_every_required_property():
    """nodes_from_r's queues per node: those whose required properties the node has all of
    (the rule written out per node and queue here), on random properties and queues."""
    import random

    from rush.rjms.flux.resource_set import nodes_from_r

    rng = random.Random(28)
    for _ in range(200):
        ranks = rng.randint(1, 12)
        props = {
            p: sorted(rng.sample(range(ranks), rng.randint(0, ranks)))
            for p in rng.sample("abcd", rng.randint(0, 4))
        }
        queues = {
            f"q{k}": rng.sample("abcde", rng.randint(0, 3)) for k in rng.sample(range(6), rng.randint(0, 5))
        }
        everything = {"version": 1, "execution": {
            "R_lite": [{"rank": f"0-{ranks - 1}", "children": {"core": "0-3"}}],
            "properties": {p: ",".join(map(str, ids)) for p, ids in props.items() if ids},
        }}  # fmt: skip
        have = {p: set(ids) for p, ids in props.items() if ids}
        nodes = nodes_from_r(everything, None, None, queues=queues)
        for rank, node in enumerate(nodes):
            want = sorted(q for q, need in queues.items() if all(rank in have.get(p, ()) for p in need))
            assert node.partitions == tuple(want)
