"""Hostile answers from the RJMS: every one is a clear RJMSError, the daemon takes no action on
it and keeps running. Table-driven; each table row is one counted case.

slurmrestd is played by :mod:`tests.daemon.fake_slurmrestd` (a localhost HTTP server in the
v0.0.38 wire format: the real slurmrestd never answers garbage on demand), squeue/sinfo by
small shell scripts run for real as subprocesses. The real-Slurm side of the backend is in
tests/slurm/test_backend.py and tests/daemon/test_live_slurm.py.
"""

from __future__ import annotations

import json
import math
import re
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from rush.daemon.service import Daemon
from rush.errors import RJMSError
from rush.planner.config import parse_config
from rush.rjms.base import get_backend
from rush.rjms.slurm import SlurmBackend
from tests.daemon.fake_slurmrestd import FakeSlurmrestd, body, job_record, node_record


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jobs_with(**fields) -> bytes:
    record = job_record(7)
    for key, value in fields.items():
        if value is KeyError:
            record.pop(key)
        else:
            record[key] = value
    return body(jobs=[record])


def nodes_with(**fields) -> bytes:
    record = node_record()
    for key, value in fields.items():
        if value is KeyError:
            record.pop(key)
        else:
            record[key] = value
    return body(nodes=[record])


# (case, endpoint, HTTP status, answer body, expected message). Bodies are what a broken
# proxy, a corrupt or hostile peer, or a future Slurm could send.
BODY_CASES: list[tuple[str, str, int, bytes, str]] = [
    ("html", "jobs", 200, b"<html><body>502 proxy error</body></html>", "not a JSON object"),
    ("binary", "jobs", 200, bytes(range(256)) * 4, "not a JSON object"),
    ("empty body", "jobs", 200, b"", "not a JSON object"),
    ("truncated json", "jobs", 200, b'{"jobs": [{"job_id": ', "not a JSON object"),
    ("top-level array", "jobs", 200, b"[1, 2, 3]", "not a JSON object"),
    ("deeply nested", "jobs", 200, b"[" * 200_000 + b"]" * 200_000, "not a JSON object"),
    ("utf-16", "jobs", 200, body(jobs=[]).decode().encode("utf-16"), "not a JSON object"),
    (
        "error list",
        "jobs",
        200,
        json.dumps({"errors": [{"error": "slurmctld down"}]}).encode(),
        "slurmctld down",
    ),
    ("jobs not a list", "jobs", 200, body(jobs="many"), "no list of jobs"),
    ("jobs of numbers", "jobs", 200, body(jobs=[1, 2]), "no list of jobs"),
    ("no jobs key", "jobs", 200, body(), "no list of jobs"),
    ("job_id missing", "jobs", 200, jobs_with(job_id=KeyError), "job_id"),
    ("job_id string", "jobs", 200, jobs_with(job_id="12"), "not a positive integer"),
    ("job_id negative", "jobs", 200, jobs_with(job_id=-3), "not a positive integer"),
    ("job_id 2**70", "jobs", 200, jobs_with(job_id=2**70), "not a positive integer"),
    ("job_state number", "jobs", 200, jobs_with(job_state=5), "not a state name"),
    ("job_state empty", "jobs", 200, jobs_with(job_state=""), "empty job_state"),
    ("cpus negative", "jobs", 200, jobs_with(cpus=-4), "not a finite number >= 0"),
    ("cpus NaN", "jobs", 200, jobs_with(cpus=math.nan), "not a finite number"),
    ("cpus Infinity", "jobs", 200, jobs_with(cpus=math.inf), "not a finite number"),
    ("cpus 1e30", "jobs", 200, jobs_with(cpus=1e30), "not a count"),
    ("cpus 400-digit integer", "jobs", 200, jobs_with(cpus=10**400), "not a finite number"),
    ("start_time 400-digit integer", "jobs", 200, jobs_with(start_time=-(10**400)), "not a finite number"),
    ("cpus fractional", "jobs", 200, jobs_with(cpus=2.5), "not a count"),
    ("cpus string", "jobs", 200, jobs_with(cpus="8"), "not a number"),
    ("cpus bool", "jobs", 200, jobs_with(cpus=True), "not a number"),
    ("submit_time missing", "jobs", 200, jobs_with(submit_time=KeyError), "submit_time"),
    ("submit_time zero", "jobs", 200, jobs_with(submit_time=0), "no submit_time"),
    ("submit_time string", "jobs", 200, jobs_with(submit_time="yesterday"), "not a number"),
    ("submit_time 1e300", "jobs", 200, jobs_with(submit_time=1e300), "not a unix time"),
    ("start_time negative", "jobs", 200, jobs_with(start_time=-1), ">= 0"),
    ("time_limit negative", "jobs", 200, jobs_with(time_limit=-5), ">= 0"),
    ("time_limit object", "jobs", 200, jobs_with(time_limit={"number": "x"}), "not a number"),
    ("restart_cnt negative", "jobs", 200, jobs_with(restart_cnt=-1), ">= 0"),
    ("admin_comment object", "jobs", 200, jobs_with(admin_comment={"a": 1}), "not a string"),
    ("user_name list", "jobs", 200, jobs_with(user_name=["root"]), "not a string"),
    ("nice string", "jobs", 200, jobs_with(nice="-5"), "not a 32-bit integer"),
    ("nice 2**40", "jobs", 200, jobs_with(nice=2**40), "not a 32-bit integer"),
    ("nodes not a list", "nodes", 200, body(nodes={"n1": {}}), "no list of nodes"),
    ("node cpus missing", "nodes", 200, nodes_with(cpus=KeyError), "cpus"),
    ("node cpus negative", "nodes", 200, nodes_with(cpus=-64), "not a finite number >= 0"),
    ("node cpus 400-digit integer", "nodes", 200, nodes_with(cpus=10**400), "not a finite number"),
    ("node alloc string", "nodes", 200, nodes_with(alloc_cpus="all"), "not a number"),
    ("node partitions string", "nodes", 200, nodes_with(partitions="debug"), "not a list of names"),
    ("node state_flags dict", "nodes", 200, nodes_with(state_flags={"DRAIN": 1}), "not a list of names"),
    ("node state number", "nodes", 200, nodes_with(state=3), "not a state name"),
    ("http 500 html", "jobs", 500, b"<html>Internal Server Error</html>", "HTTP 500"),
    (
        "http 500 slurm errors",
        "jobs",
        500,
        json.dumps({"errors": [{"error": "boom"}]}).encode(),
        "HTTP 500: boom",
    ),
    ("http 401", "jobs", 401, b"Authentication failure", "HTTP 401"),
    ("http 404", "nodes", 404, b"Not Found", "HTTP 404"),
]
# Transport failures: (case, how the fake misbehaves, expected message).
TRANSPORT_CASES: list[tuple[str, Callable[[FakeSlurmrestd], None], str]] = [
    ("never answers", lambda f: f.delays.update(jobs=5), "did not answer within"),
    ("trickles forever", lambda f: f.trickle.update(jobs=0.05), "did not answer within"),
    ("body shorter than promised", lambda f: f.short.add("jobs"), "cannot connect"),
    (
        "answer over the size cap",
        lambda f: setattr(f, "jobs", [job_record(i) for i in range(1, 6000)]),
        "exceeds 1 MiB",
    ),
]


def rest_backend(url: str, tmp_path: Path, **options) -> SlurmBackend:
    empty = tmp_path / "no-slurm-commands"
    empty.mkdir(exist_ok=True)
    options = {"fallback": False, "timeout": 1, "bin_dir": str(empty), "max_answer_mb": 1, **options}
    return get_backend("slurm", rest_url=url, **options)


@pytest.mark.parametrize(
    ("case", "endpoint", "status", "answer", "message"), BODY_CASES, ids=[c[0] for c in BODY_CASES]
)
def test_rest_garbage_is_a_clear_error(tmp_path, case, endpoint, status, answer, message):
    with FakeSlurmrestd() as fake:
        fake.jobs = [job_record(7)]
        fake.answers[endpoint] = (status, answer)
        with pytest.raises(RJMSError) as err:
            rest_backend(fake.url, tmp_path).read_state()
    assert message in str(err.value)
    assert err.value.where and err.value.fix  # names the place and the fix
    assert len(str(err.value)) < 2000  # a journal line, not a dump of the answer


@pytest.mark.parametrize(
    ("case", "misbehave", "message"), TRANSPORT_CASES, ids=[c[0] for c in TRANSPORT_CASES]
)
def test_rest_transport_failures_are_clear_errors(tmp_path, case, misbehave, message):
    with FakeSlurmrestd() as fake:
        fake.jobs = [job_record(7)]
        misbehave(fake)
        with pytest.raises(RJMSError, match=message) as err:
            rest_backend(fake.url, tmp_path).read_state()
    assert err.value.fix
    if "did not answer" in message:  # a slow answer names the option that allows a longer one
        assert "rjms.options.timeout" in err.value.fix


def test_rest_connection_refused(tmp_path):
    with pytest.raises(RJMSError, match="cannot connect to slurmrestd") as err:
        rest_backend(f"http://127.0.0.1:{closed_port()}", tmp_path).read_state()
    assert "rest_url" in err.value.fix


def test_a_non_utf8_job_name_does_not_blind_the_daemon(tmp_path):
    """One job named in Latin-1 bytes: the queue is still read, on both paths, the name replaced."""
    raw = body(jobs=[job_record(7, name="caf\u00e9")]).replace(b"caf\\u00e9", b"caf\xe9")
    assert b"caf\xe9" in raw
    with FakeSlurmrestd() as fake:
        fake.answers["jobs"] = (200, raw)
        by_rest = rest_backend(fake.url, tmp_path).read_state()
    by_cli = get_backend("slurm", bin_dir=str(fake_commands(tmp_path, raw))).read_state()
    for state in (by_rest, by_cli):
        [job] = state.jobs
        assert job.job_id == 7 and job.name == "caf\ufffd"


def test_a_large_valid_queue_is_read(tmp_path):
    """The control for the size cap: 20 000 real-shaped records under the default cap parse."""
    with FakeSlurmrestd() as fake:
        fake.jobs = [job_record(i, "RUNNING" if i % 2 else "PENDING") for i in range(1, 20_001)]
        state = rest_backend(fake.url, tmp_path, max_answer_mb=512, timeout=30).read_state()
    assert len(state.jobs) == 20_000 and len(state.pending) == 10_000
    assert state.total_procs == 8 and state.free_procs == 0


# -- the command-line path: the same garbage printed by squeue/sinfo, run as real subprocesses
def fake_commands(
    tmp_path: Path, squeue: bytes | str, sinfo: bytes | str = body(nodes=[node_record()])
) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool, script in (("squeue", squeue), ("sinfo", sinfo)):
        if isinstance(script, bytes):  # print these bytes exactly
            (bin_dir / f"{tool}.out").write_bytes(script)
            script = f"#!/bin/sh\ncat '{bin_dir / f'{tool}.out'}'\n"
        (bin_dir / tool).write_text(script)
        (bin_dir / tool).chmod(0o755)
    return bin_dir


NOT_JSON_CLI = "invalid JSON|not an object|absurdly nested"
CLI_CASES: list[tuple[str, bytes | str | None, str]] = [
    *[
        # squeue words a non-object answer differently from the REST client.
        (case, answer, NOT_JSON_CLI if message == "not a JSON object" else message)
        for case, endpoint, status, answer, message in BODY_CASES
        if status == 200 and endpoint == "jobs" and case != "error list"
    ],
    (
        "error list",
        json.dumps({"errors": ["slurm_load_jobs error: Unable to contact slurm controller"]}).encode(),
        "Unable to contact",
    ),
    (
        "exit status 1",
        "#!/bin/sh\necho 'slurm_load_jobs error: Socket timed out' >&2\nexit 1\n",
        "Socket timed out",
    ),
    ("killed by a signal", "#!/bin/sh\nkill -9 $$\n", "squeue failed"),
    ("hangs", "#!/bin/sh\nexec sleep 30\n", r"did not answer within 1 s(.|\n)*rjms\.options\.timeout"),
    ("output over the size cap", "#!/bin/sh\nhead -c 3000000 /dev/zero\n", "more than the 1 MiB"),
    ("non-utf8 stderr and exit 2", "#!/bin/sh\nprintf '\\377\\376 broken' >&2\nexit 2\n", "squeue failed"),
    ("not executable", None, "not executable"),
    ("missing", "", "squeue not found"),
]


@pytest.mark.parametrize(("case", "squeue", "message"), CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_command_garbage_is_a_clear_error(tmp_path, case, squeue, message):
    bin_dir = fake_commands(tmp_path, squeue if squeue is not None else "#!/bin/sh\necho '{}'\n")
    if squeue is None:
        (bin_dir / "squeue").chmod(0o644)
    if squeue == "":
        (bin_dir / "squeue").unlink()
    backend = get_backend("slurm", bin_dir=str(bin_dir), timeout=1, max_answer_mb=1)
    with pytest.raises(RJMSError) as err:
        backend.read_state()
    assert re.search(message, str(err.value)) and err.value.where
    assert len(str(err.value)) < 2000


# -- the daemon: no action on a bad answer, and it keeps running ---------------------------
def daemon_config(tmp_path: Path, url: str, dry_run: bool = False):
    empty = tmp_path / "no-slurm-commands"
    empty.mkdir(exist_ok=True)
    return parse_config(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "dry_run": dry_run},
            "policy": {"policy": "FCFS"},
            "rjms": {
                "backend": "slurm",
                "options": {
                    "rest_url": url,
                    "fallback": False,
                    "timeout": 1,
                    "bin_dir": str(empty),
                    "max_answer_mb": 1,
                },
            },
        }
    )


DAEMON_CASES = [(case, endpoint, status, answer) for case, endpoint, status, answer, _ in BODY_CASES]


@pytest.mark.parametrize(
    ("case", "endpoint", "status", "answer"), DAEMON_CASES, ids=[c[0] for c in DAEMON_CASES]
)
def test_daemon_takes_no_action_on_garbage_and_recovers(tmp_path, case, endpoint, status, answer):
    with FakeSlurmrestd() as fake:
        fake.jobs = [job_record(7), job_record(8, "RUNNING", cpus=8)]
        fake.answers[endpoint] = (status, answer)
        daemon = Daemon(daemon_config(tmp_path, fake.url))
        report = daemon.run_cycle()
        assert not report.ok and report.outcome == "rjms_error" and report.decisions == {}
        assert daemon.journal.decisions() == [] and daemon.journal.open_intents() == []
        assert [r for r in fake.requests if r[0] != "GET"] == []  # nothing sent to Slurm
        assert len(daemon.journal.events("rjms_error")) == 1 and daemon.failures == 1
        # The next good answer is acted on: the daemon kept running.
        del fake.answers[endpoint]
        report = daemon.run_cycle()
        assert report.ok and report.applied == {"priority": 1}, report.error
        assert daemon.failures == 0
        [(method, path, payload)] = [r for r in fake.requests if r[0] != "GET"]
        assert (method, path) == ("POST", "/slurm/v0.0.38/job/7") and payload["nice"] < 0


# -- acting through slurmrestd -------------------------------------------------------------
def test_rest_actions_send_the_v0_0_38_job_updates(tmp_path):
    with FakeSlurmrestd() as fake:
        fake.jobs = [job_record(7), job_record(9, "RUNNING")]
        b = rest_backend(fake.url, tmp_path)
        assert b.priority_lever == "nice"  # no scontrol here: SiteFactor cannot be set
        assert b.hold(7).ok and b.job(7).held
        assert b.release(7).ok and not b.job(7).held
        assert b.set_priority(7, 1234).ok and b.job(7).site_factor == 1234
        assert b.cancel(9).ok
        sent = [(m, p, d) for m, p, d in fake.requests if m != "GET"]
        assert sent == [
            ("POST", "/slurm/v0.0.38/job/7", {"hold": True}),
            ("POST", "/slurm/v0.0.38/job/7", {"hold": False}),
            ("POST", "/slurm/v0.0.38/job/7", {"nice": -1234}),
            ("DELETE", "/slurm/v0.0.38/job/9", None),
        ]
        # Slurm's refusal is a failed action with its reason, not an exception.
        refused = b.hold(4242)
        assert not refused.ok and "Invalid job id" in refused.answer and refused.attempted
        fake.answers["job/7"] = (500, b"<html>oops</html>")
        assert not b.release(7).ok
        with pytest.raises(RJMSError, match="invalid site factor"):
            b.set_priority(7, 2**31 - 2)  # beyond Slurm's nice range


def test_requeue_without_scontrol_is_a_clear_certain_failure(tmp_path):
    with FakeSlurmrestd() as fake:
        fake.jobs = [job_record(9, "RUNNING")]
        result = rest_backend(fake.url, tmp_path).requeue(9, {"class": "large", "requeues": "1"})
        assert not result.ok and not result.attempted
        assert "needs scontrol" in result.answer and "v0.0.38" in result.answer
        assert [r for r in fake.requests if r[0] != "GET"] == []  # nothing was killed


def test_rest_action_unreachable_without_commands_raises(tmp_path):
    b = rest_backend(f"http://127.0.0.1:{closed_port()}", tmp_path, fallback=True)
    with pytest.raises(RJMSError, match="cannot connect"):
        b.hold(7)


# -- rush daemon --once never acts unless --apply is given ---------------------------------
def test_once_is_dry_run_even_when_the_config_says_apply(tmp_path):
    with FakeSlurmrestd() as fake:
        fake.jobs = [job_record(7), job_record(8, "RUNNING", cpus=8)]
        empty = tmp_path / "no-slurm-commands"
        empty.mkdir()
        path = tmp_path / "rush.toml"
        path.write_text(
            f'[daemon]\njournal = "{tmp_path / "j.sqlite"}"\ndry_run = false\n'
            f'[rjms]\nbackend = "slurm"\n[rjms.options]\nrest_url = "{fake.url}"\n'
            f'fallback = false\ntimeout = 5\nbin_dir = "{empty}"\n'
        )

        def once(*extra: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [sys.executable, "-m", "rush", "daemon", "--config", str(path), "--once", *extra],
                capture_output=True,
                text=True,
                timeout=300,
            )

        out = once()
        assert out.returncode == 0, out.stderr
        assert "(dry-run): ok" in out.stdout and "applied {}" in out.stdout
        assert [r for r in fake.requests if r[0] != "GET"] == []
        out = once("--apply")
        assert out.returncode == 0, out.stderr
        assert "(apply): ok" in out.stdout and "applied {'priority': 1}" in out.stdout
        assert [(m, p) for m, p, _ in fake.requests if m != "GET"] == [("POST", "/slurm/v0.0.38/job/7")]
