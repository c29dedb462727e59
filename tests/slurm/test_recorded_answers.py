"""Recorded answers of every Slurm and OpenAPI version run here parse to identical rush jobs.

tests/slurm/recorded/<install>/ holds what Slurm 22.05 (commands, REST v0.0.38) and 25.11
(commands, REST v0.0.41 .. v0.0.44) answered for the same cluster state: the same five jobs
submitted the same way (tests/slurm/record_answers.py, which recorded them). Each recording
is read through the real backend: the commands are shell scripts printing the recorded bytes
(run as subprocesses), slurmrestd is a localhost HTTP server replaying the recorded answers
and the paths the real one published at /openapi/v3 (Slurm itself cannot be made to answer
in an older version's shape). Then the hostile-input table for the normaliser
(:mod:`rush.rjms.slurm_json`): wrong types, missing keys, absurd lists, in every shape.
"""

from __future__ import annotations

import copy
import json
import math
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rush.errors import RJMSError
from rush.rjms import slurm_json
from rush.rjms.base import ClusterState, RJMSJob, get_backend
from rush.rjms.slurm import SlurmBackend

RECORDED = Path(__file__).resolve().parent / "recorded"
MANIFESTS = {d.name: json.loads((d / "manifest.json").read_text()) for d in sorted(RECORDED.glob("*/"))}
RECORDINGS = [(slurm, source) for slurm, manifest in MANIFESTS.items() for source in manifest["sources"]]
# What the recordings must contain: Slurm 22.05 with v0.0.38, 25.11 with v0.0.41 .. v0.0.44.
EXPECTED = {
    "22.05": ["commands", "rest-v0.0.38"],
    "25.11": ["commands", "rest-v0.0.41", "rest-v0.0.42", "rest-v0.0.43", "rest-v0.0.44"],
}


class Replay:
    """slurmrestd replayed: its /openapi/v3 paths and the recorded GET answers of one install."""

    def __init__(self, slurm: str) -> None:
        directory = RECORDED / slurm
        paths = MANIFESTS[slurm]["openapi_paths"]
        self.answers = {"/openapi/v3": json.dumps({"paths": {p: {} for p in paths}}).encode()}
        for source in MANIFESTS[slurm]["sources"]:
            if source.startswith("rest-"):
                api = source.removeprefix("rest-")
                for endpoint in ("jobs", "nodes"):
                    self.answers[f"/slurm/{api}/{endpoint}"] = (
                        directory / source / f"{endpoint}.json"
                    ).read_bytes()
        self.asked: list[str] = []
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                replay.asked.append(self.path)
                data = replay.answers.get(self.path.rstrip("/"))
                status = 200 if data is not None else 404
                if isinstance(data, tuple):  # (status, body)
                    status, data = data
                self.send_response(status)
                self.send_header("Content-Length", str(len(data or b"")))
                self.end_headers()
                self.wfile.write(data or b"")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def recorded_commands(tmp_path: Path, slurm: str) -> Path:
    """A bin directory whose squeue and scontrol (or 22.05's sinfo) print the recorded answers."""
    directory = RECORDED / slurm / "commands"
    bin_dir = tmp_path / f"bin-{slurm}"
    bin_dir.mkdir(parents=True)
    nodes_tool = (directory / "nodes-from").read_text().split()[0]  # scontrol or sinfo
    for tool, answer in (("squeue", "jobs.json"), (nodes_tool, "nodes.json")):
        (bin_dir / tool).write_text(f"#!/bin/sh\ncat '{directory / answer}'\n")
        (bin_dir / tool).chmod(0o755)
    return bin_dir


def read(tmp_path: Path, slurm: str, source: str) -> tuple[ClusterState, list[RJMSJob], list[dict]]:
    """(read_state, every job slurmctld listed, accounting of the finished ones) of one recording."""
    ids = [int(i) for i in MANIFESTS[slurm]["jobs"]]
    options: dict[str, Any] = {"priority_lever": "site_factor"}
    replay = None
    if source == "commands":
        options["bin_dir"] = str(recorded_commands(tmp_path, slurm))
    else:
        replay = Replay(slurm)
        empty = tmp_path / "no-commands"
        empty.mkdir(parents=True, exist_ok=True)
        options |= {"rest_url": replay.url, "rest_api": source.removeprefix("rest-"), "fallback": False}
        options["bin_dir"] = str(empty)
    try:
        backend = get_backend("slurm", **options)
        state = backend.read_state()
        assert backend.last_source == ("cli" if source == "commands" else "rest")
        every = [job for job in (backend.job(i) for i in ids) if job is not None]
        return state, every, backend.accounting(ids)
    finally:
        if replay is not None:
            replay.close()


def normalised(slurm: str, jobs: list[RJMSJob]) -> dict[str, RJMSJob]:
    """Jobs by name, with the ids and times that two recordings cannot share made comparable."""
    names = MANIFESTS[slurm]["jobs"]
    return {
        names[str(j.job_id)]: replace(j, job_id=0, submit=0.0, start=None if j.start is None else 0.0)
        for j in jobs
    }


def test_every_version_was_recorded():
    for slurm, sources in EXPECTED.items():
        assert MANIFESTS[slurm]["sources"] == sources, slurm
        assert MANIFESTS[slurm]["slurm"].startswith(slurm)


@pytest.mark.parametrize(("slurm", "source"), RECORDINGS, ids=[f"{s}-{v}" for s, v in RECORDINGS])
def test_recording_parses_to_the_cluster_state(tmp_path, slurm, source):
    state, every, accounting = read(tmp_path, slurm, source)
    cpus = MANIFESTS[slurm]["cpus"]
    assert (state.total_procs, state.free_procs, state.partitions) == (cpus, cpus - 60, ("debug",))
    live = {MANIFESTS[slurm]["jobs"][str(j.job_id)]: j for j in state.jobs}
    assert sorted(live) == ["blocker", "held", "waiter"]  # finished jobs are not in the queue
    blocker, waiter, held = live["blocker"], live["waiter"], live["held"]
    assert blocker.state == "RUNNING" and blocker.procs == 60 and blocker.start is not None
    assert blocker.tags == {"idempotent": "1", "app": "blocker", "wtype": "network"}
    assert blocker.requested_time == 300 and blocker.user == "root" and blocker.partition == "debug"
    assert waiter.state == "PENDING" and waiter.procs == 8 and waiter.requested_time == 420
    assert not waiter.held and waiter.start is None and waiter.name == "waiter"
    assert held.held and held.reason == "JobHeldUser" and held.requested_time == math.inf
    # Finished jobs are read explicitly, with their exit codes in sacct's form.
    assert {MANIFESTS[slurm]["jobs"][str(j.job_id)]: j.state for j in every} == {
        "blocker": "RUNNING",
        "waiter": "PENDING",
        "held": "PENDING",
        "done": "COMPLETED",
        "failed": "FAILED",
    }
    assert [(r["state"], r["exit_code"], r["procs"], r["restarts"]) for r in accounting] == [
        ("COMPLETED", "0:0", 1, 0),
        ("FAILED", "3:0", 1, 0),
    ]
    for r in accounting:
        assert r["end"] >= r["start"] >= r["submit"] > 0


def test_every_recording_gives_identical_rush_jobs(tmp_path):
    """One Slurm: commands and every OpenAPI version give the very same jobs (times included);
    across Slurms the same jobs once ids and times are set aside."""
    reads = {
        (slurm, source): read(tmp_path / f"{slurm}-{source}", slurm, source) for slurm, source in RECORDINGS
    }
    for (slurm, source), (state, every, accounting) in reads.items():
        commands = reads[(slurm, "commands")]
        assert state.jobs == commands[0].jobs, (slurm, source)
        assert every == commands[1] and accounting == [
            {**r, "source": "rest" if source != "commands" else "cli"} for r in commands[2]
        ], (slurm, source)
    reference = normalised("22.05", reads[("22.05", "commands")][1])
    for (slurm, source), (_, every, _) in reads.items():
        assert normalised(slurm, every) == reference, (slurm, source)


@pytest.mark.parametrize(("slurm", "api"), [("22.05", "v0.0.38"), ("25.11", "v0.0.44")])
def test_negotiation_takes_the_newest_version_served(slurm, api):
    replay = Replay(slurm)
    try:
        backend = get_backend("slurm", rest_url=replay.url, fallback=False, bin_dir="/nonexistent")
        assert backend.read_state().total_procs == MANIFESTS[slurm]["cpus"]
        assert backend.rest.api == api and "negotiated" in backend.rest.api_note
        # Asked once, then every request goes to the chosen version.
        assert replay.asked[0] == "/openapi/v3" and replay.asked.count("/openapi/v3") == 1
        assert all(p.startswith(f"/slurm/{api}/") for p in replay.asked[1:])
    finally:
        replay.close()


def test_negotiation_refuses_a_slurmrestd_serving_only_unknown_versions():
    replay = Replay("25.11")
    replay.answers["/openapi/v3"] = json.dumps({"paths": {"/slurm/v0.0.99/jobs/": {}}}).encode()
    try:
        backend = get_backend("slurm", rest_url=replay.url, fallback=False, bin_dir="/nonexistent")
        with pytest.raises(RJMSError, match="serves OpenAPI v0.0.99; rush knows v0.0.44") as err:
            backend.read_state()
        assert "data_parser" in err.value.fix
    finally:
        replay.close()


@pytest.mark.parametrize(
    ("spec", "outcome"),
    [
        (b'{"paths": ["/slurm/v0.0.44/jobs/"]}', "assumed"),  # paths not an object
        (b'{"paths": {"/slurm/v0.0.44/jobs/": {}, "/slurm/../jobs": {}, "%s": 1}}', "v0.0.44"),
        (b"[" * 100_000, "assumed"),  # nested absurdly deep: not JSON to rush
        (json.dumps({"paths": {f"/x/{i}": {} for i in range(50_000)}}).encode(), "no Slurm jobs endpoint"),
    ],
)
def test_negotiation_on_hostile_specs(spec, outcome):
    replay = Replay("25.11")
    replay.answers["/openapi/v3"] = spec
    try:
        backend = get_backend("slurm", rest_url=replay.url, fallback=False, bin_dir="/nonexistent")
        if outcome == "no Slurm jobs endpoint":
            with pytest.raises(RJMSError, match=outcome):
                backend.read_state()
            return
        if outcome == "assumed":  # v0.0.38 assumed; this 25.11 replay does not serve it: 404
            with pytest.raises(RJMSError, match="HTTP 404") as err:
                backend.read_state()
            assert "rest_api" in err.value.fix and backend.rest.api_note.startswith("assumed")
            return
        backend.read_state()
        assert backend.rest.api == outcome
    finally:
        replay.close()


def test_negotiation_failure_is_not_kept():
    """slurmrestd in trouble (HTTP 500 at /openapi/v3): an error now, asked again next read."""
    replay = Replay("25.11")
    spec = replay.answers["/openapi/v3"]
    replay.answers["/openapi/v3"] = (500, b'{"errors": [{"error": "Unable to contact slurmctld"}]}')
    try:
        backend = get_backend("slurm", rest_url=replay.url, fallback=False, bin_dir="/nonexistent")
        with pytest.raises(RJMSError, match="HTTP 500: Unable to contact slurmctld"):
            backend.read_state()
        assert backend.rest.api is None
        replay.answers["/openapi/v3"] = spec
        assert backend.read_state().total_procs == MANIFESTS["25.11"]["cpus"]
        assert backend.rest.api == "v0.0.44"
    finally:
        replay.close()


def test_new_sinfo_shape_is_a_clear_error(tmp_path):
    """Slurm 23.02+'s sinfo --json (per partition and state) has no node list: the fix names scontrol."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    jobs = RECORDED / "25.11" / "commands" / "jobs.json"
    (bin_dir / "squeue").write_text(f"#!/bin/sh\ncat '{jobs}'\n")
    (bin_dir / "sinfo").write_text('#!/bin/sh\necho \'{"sinfo": [], "errors": []}\'\n')
    for tool in ("squeue", "sinfo"):
        (bin_dir / tool).chmod(0o755)
    with pytest.raises(RJMSError, match="no list of nodes .sinfo --json of Slurm 23.02") as err:
        get_backend("slurm", bin_dir=str(bin_dir)).read_state()
    assert "scontrol show nodes --json" in err.value.fix


# -- the normaliser on hostile input -------------------------------------------------------------
def recorded_records(slurm: str, source: str, endpoint: str) -> list[dict[str, Any]]:
    return json.loads((RECORDED / slurm / source / f"{endpoint}.json").read_text())[endpoint]


OLD_JOB = recorded_records("22.05", "rest-v0.0.38", "jobs")[0]
NEW_JOB = recorded_records("25.11", "rest-v0.0.44", "jobs")[0]
OLD_NODE = recorded_records("22.05", "rest-v0.0.38", "nodes")[0]
NEW_NODE = recorded_records("25.11", "rest-v0.0.44", "nodes")[0]
HUGE = ["PENDING"] * 1_000_000

# (case, base record, changes (KeyError: remove the key), expected message)
JOB_CASES: list[tuple[str, dict, dict, str]] = [
    ("job_id missing", NEW_JOB, {"job_id": KeyError}, "job_id"),
    ("job_id object", NEW_JOB, {"job_id": {"set": True, "number": 5}}, "not a positive integer"),
    ("job_state missing", NEW_JOB, {"job_state": KeyError}, "job_state"),
    ("job_state list of numbers", NEW_JOB, {"job_state": [1, 2]}, "not a list of state names"),
    ("job_state huge list", NEW_JOB, {"job_state": HUGE}, "1000000 names, not a state"),
    ("job_state empty list", NEW_JOB, {"job_state": []}, "empty job_state"),
    ("job_state object", OLD_JOB, {"job_state": {"current": "PENDING"}}, "not a state name"),
    ("job_state name too long", NEW_JOB, {"job_state": ["P" * 10_000]}, "not a list of state names"),
    (
        "submit_time unset",
        NEW_JOB,
        {"submit_time": {"set": False, "infinite": False, "number": 0}},
        "no submit_time",
    ),
    (
        "submit_time number string",
        NEW_JOB,
        {"submit_time": {"set": True, "number": "1700000000"}},
        "not a number",
    ),
    ("submit_time missing", OLD_JOB, {"submit_time": KeyError}, "submit_time"),
    ("start_time NaN in object", NEW_JOB, {"start_time": {"set": True, "number": math.nan}}, "not a finite"),
    ("cpus negative in object", NEW_JOB, {"cpus": {"set": True, "infinite": False, "number": -2}}, ">= 0"),
    ("cpus list", NEW_JOB, {"cpus": [4]}, "not a number"),
    ("cpus 2**40", OLD_JOB, {"cpus": 2**40}, "not a count"),
    ("time_limit string", NEW_JOB, {"time_limit": "UNLIMITED"}, "not a number"),
    ("time_limit bool in object", NEW_JOB, {"time_limit": {"set": True, "number": True}}, "not a number"),
    ("restart_cnt object string", NEW_JOB, {"restart_cnt": {"number": "1"}}, "not a number"),
    ("nice object float", NEW_JOB, {"nice": {"set": True, "number": 1.5}}, "not a 32-bit integer"),
    ("admin_comment list", NEW_JOB, {"admin_comment": ["rush:class=large"]}, "not a string"),
    ("name number", NEW_JOB, {"name": 12}, "not a string"),
]
NODE_CASES: list[tuple[str, dict, dict, str]] = [
    ("cpus missing", NEW_NODE, {"cpus": KeyError}, "cpus"),
    ("cpus object string", NEW_NODE, {"cpus": {"set": True, "number": "64"}}, "not a number"),
    ("alloc_cpus negative", OLD_NODE, {"alloc_cpus": -1}, ">= 0"),
    ("state huge list", NEW_NODE, {"state": ["IDLE"] * 1_000_000}, "not a state"),
    ("state list of objects", NEW_NODE, {"state": [{"IDLE": True}]}, "not a list of state names"),
    ("state number", OLD_NODE, {"state": 7}, "not a state name"),
    ("state_flags huge", OLD_NODE, {"state_flags": ["DRAIN"] * 100_000}, "not a list of flags"),
    ("state_flags string", OLD_NODE, {"state_flags": "DRAIN"}, "not a list of names"),
    ("partitions object", NEW_NODE, {"partitions": {"debug": 1}}, "not a list of names"),
]


def changed(base: dict, changes: dict) -> dict:
    record = copy.deepcopy(base)
    for key, value in changes.items():
        if value is KeyError:
            record.pop(key, None)
        else:
            record[key] = value
    return record


@pytest.mark.parametrize(("case", "base", "changes", "message"), JOB_CASES, ids=[c[0] for c in JOB_CASES])
def test_hostile_job_record_is_a_clear_error(case, base, changes, message):
    # A huge list is refused by its length (the message says it), not walked.
    with pytest.raises((KeyError, ValueError)) as err:
        slurm_json.parse_job(changed(base, changes))
    assert message in str(err.value) and len(str(err.value)) < 300


@pytest.mark.parametrize(("case", "base", "changes", "message"), NODE_CASES, ids=[c[0] for c in NODE_CASES])
def test_hostile_node_record_is_a_clear_error(case, base, changes, message):
    with pytest.raises((KeyError, ValueError)) as err:
        slurm_json.parse_nodes([changed(base, changes)])
    assert message in str(err.value) and len(str(err.value)) < 300


def test_hostile_answer_through_the_backend_names_the_place(tmp_path):
    """Through the backend the same garbage is an RJMSError naming the source and the fix."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    answer = tmp_path / "jobs.json"
    answer.write_text(json.dumps({"jobs": [changed(NEW_JOB, {"job_state": HUGE[:100]})]}))
    nodes = RECORDED / "22.05" / "commands" / "nodes.json"
    for tool, path in (("squeue", answer), ("sinfo", nodes)):
        (bin_dir / tool).write_text(f"#!/bin/sh\ncat '{path}'\n")
        (bin_dir / tool).chmod(0o755)
    backend: SlurmBackend = get_backend("slurm", bin_dir=str(bin_dir))
    with pytest.raises(RJMSError, match="100 names, not a state") as err:
        backend.read_state()
    assert err.value.where == "slurm jobs (cli)" and err.value.fix


@pytest.mark.parametrize("flag", ["DRAIN", "DOWN", "NOT_RESPONDING", "MAINTENANCE", "POWERED_DOWN", "FAIL"])
def test_a_flag_anywhere_in_the_node_state_means_no_free_cpus(flag):
    idle_new = changed(NEW_NODE, {"state": ["IDLE"], "alloc_cpus": 0})
    idle_old = changed(OLD_NODE, {"state": "idle", "state_flags": [], "alloc_cpus": 0})
    assert slurm_json.parse_nodes([idle_new])[1] == slurm_json.parse_nodes([idle_old])[1] == idle_new["cpus"]
    for node in (
        changed(idle_new, {"state": ["IDLE", "RESERVED", flag]}),
        changed(idle_new, {"state": [flag, "IDLE"]}),
        changed(idle_old, {"state_flags": ["RESERVED", flag]}),
    ):
        total, free, _ = slurm_json.parse_nodes([node])
        assert (total, free) == (node["cpus"], 0), node["state"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["PENDING"], "PENDING"),
        (["COMPLETED", "COMPLETING"], "COMPLETING"),
        (["PENDING", "REQUEUED"], "REQUEUED"),
        (["RUNNING", "CONFIGURING"], "CONFIGURING"),
        (["PENDING", "REQUEUE_HOLD", "SPECIAL_EXIT"], "REQUEUE_HOLD"),
        (["RUNNING", "POWER_UP_NODE"], "RUNNING"),
        ("COMPLETING", "COMPLETING"),
    ],
)
def test_job_state_lists_fold_into_slurms_own_name(value, expected):
    assert slurm_json.job_state(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (768, "3:0"),
        (9, "0:9"),
        (0, "0:0"),
        (None, ""),
        (
            {
                "status": ["SIGNALED"],
                "return_code": {"set": False},
                "signal": {"id": {"set": True, "number": 9}},
            },
            "0:9",
        ),
        ({"return_code": {"set": True, "number": 2}}, "2:0"),
    ],
)
def test_exit_codes_in_every_shape(value, expected):
    assert slurm_json.exit_code(value) == expected
