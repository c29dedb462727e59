"""The Slurm backends and the job_submit plugin against a real slurmctld/slurmd/slurmrestd on
localhost, on every Slurm install of the ``slurm_cluster`` fixture (22.05, 25.11).

The operations every backend offers are tested once per backend kind (:data:`BACKEND_KINDS`,
the ``make_backend`` fixture): Slurm's commands, slurmrestd (whatever OpenAPI version it
negotiates), and later pyslurm.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from rush.errors import ConfigError, RJMSError
from rush.rjms.base import RJMSBackend, RJMSJob, get_backend
from rush.rjms.slurm import SlurmBackend, format_tags, parse_tags
from tests import polling


def backend(cluster, **options) -> SlurmBackend:
    """A backend reading through the cluster's commands (add rest_url=... for slurmrestd)."""
    return get_backend("slurm", **cluster.options(**options))


def by_commands(cluster, **options: Any) -> RJMSBackend:
    return get_backend("slurm", **cluster.options(**options))


def by_rest(cluster, **options: Any) -> RJMSBackend:
    """slurmrestd only for what it can do (no fallback to the commands on its failures)."""
    return get_backend("slurm", **cluster.options(**cluster.rest_options(), fallback=False, **options))


def by_pyslurm(cluster, **options: Any) -> RJMSBackend:
    """libslurm through pyslurm: built for Slurm 25.11 only here (.ci/vendor-pyslurm.sh)."""
    import importlib.util

    if cluster.name != "25.11":
        pytest.skip("pyslurm is built for Slurm 25.11 only here")
    if importlib.util.find_spec("pyslurm") is None:
        pytest.skip("pyslurm is not installed (.ci/vendor-pyslurm.sh .venv/bin/python)")
    return get_backend("pyslurm", **cluster.options(**options))


# One entry per backend kind; every test taking ``make_backend`` runs once per entry. A factory
# calls pytest.skip(reason) on an install its kind cannot run on.
BACKEND_KINDS: dict[str, Callable[..., RJMSBackend]] = {
    "commands": by_commands,
    "rest": by_rest,
    "pyslurm": by_pyslurm,
}


@pytest.fixture(params=list(BACKEND_KINDS))
def make_backend(request: pytest.FixtureRequest, slurm) -> Callable[..., RJMSBackend]:
    """``make_backend(**options)``: a backend of this test's kind on the session cluster."""
    return lambda **options: BACKEND_KINDS[request.param](slurm, **options)


def wait_for(predicate, timeout=60.0, step=0.5):
    return polling.wait_for(predicate, timeout, step)


def job(b: SlurmBackend, job_id: int) -> RJMSJob | None:
    """The job as slurmctld knows it, finished jobs included."""
    return b.job(job_id)


def state_of(b: SlurmBackend, job_id: int) -> str:
    found = b.job(job_id)
    return found.state if found else ""


# -- the fixture itself ---------------------------------------------------------------------
def test_cluster_is_self_contained(slurm):
    conf = slurm.conf.read_text()
    assert "/etc/" not in conf and str(slurm.dir) in conf
    assert f"CPUs={slurm.cpus}" in conf and "JobSubmitPlugins=lua" in conf
    job_id = slurm.submit("-n", "1", "-t", "1", "--wrap", "echo hello")
    wait_for(lambda: (j := slurm.job(job_id)) and j.state == "COMPLETED")
    # The job's output lands in the cluster directory, not in the caller's working directory.
    assert (slurm.dir / f"slurm-{job_id}.out").read_text().strip() == "hello"
    assert slurm.scontrol_job(job_id)["JobState"] == "COMPLETED"


# -- the job_submit plugin ------------------------------------------------------------------
def test_lua_plugin_tags_jobs(slurm):
    b = backend(slurm)
    tagged = slurm.submit(
        "-n", "1", "-t", "5", "-J", "lmp", "--comment=rush:idempotent,wtype=network", "--wrap", "sleep 60"
    )
    labelled = slurm.submit("-n", "1", "-t", "5", "--comment=rush:app=gromacs,wtype=io", "--wrap", "sleep 60")
    plain = slurm.submit("-n", "1", "-t", "5", "--comment=my own note", "--wrap", "sleep 60")
    assert job(b, tagged).tags == {"idempotent": "1", "app": "lmp", "wtype": "network"}
    assert job(b, labelled).tags == {"app": "gromacs", "wtype": "io"}
    assert job(b, plain).tags == {} and "AdminComment" not in slurm.scontrol_job(plain)
    # The daemon's tags survive a user re-declaring their keys (job_modify).
    slurm.run(
        slurm.tool("scontrol"), "update", f"JobId={tagged}", "AdminComment=rush:idempotent=1;class=large"
    )
    slurm.run(slurm.tool("scontrol"), "update", f"JobId={tagged}", "Comment=rush:wtype=compute")
    assert job(b, tagged).tags == {"app": "lmp", "wtype": "compute", "class": "large"}
    rejected = slurm.run(
        slurm.tool("scontrol"), "update", f"JobId={tagged}", "Comment=rush:wtype=gpu", check=False
    )
    assert rejected.returncode != 0 and job(b, tagged).tags["wtype"] == "compute"
    assert "rush: rejected comment 'rush:wtype=gpu'" in slurm.log_tail("slurmctld", 50)


@pytest.mark.parametrize(
    ("comment", "message"),
    [
        ("rush:wtype=quantum", "wtype must be one of"),
        ("rush:idempotent=maybe", "idempotent takes no value"),
        ("rush:app=a b", "app must be letters"),
        ("rush:speed=fast", "unknown key 'speed'"),
    ],
)
def test_lua_plugin_rejects_malformed_option(slurm, comment, message):
    out = slurm.run(
        slurm.tool("sbatch"), "--parsable", "-n", "1", f"--comment={comment}", "--wrap", "true", check=False
    )
    assert out.returncode != 0 and out.stdout.strip() == ""
    assert message in out.stderr and "Example: --comment=rush:" in out.stderr


# -- reading --------------------------------------------------------------------------------
def test_read_state_every_backend_agrees(slurm):
    kinds = {}
    for kind, make in BACKEND_KINDS.items():
        try:
            kinds[kind] = make(slurm)
        except pytest.skip.Exception:
            continue  # a kind this install cannot run (pyslurm 25.11 on 22.05)
    cli = kinds["commands"]
    blocker = slurm.submit("-n", "60", "-t", "5", "--comment=rush:idempotent", "--wrap", "sleep 120")
    waiting = slurm.submit("-n", "8", "-t", "7", "-J", "waiter", "--wrap", "sleep 10")
    unlimited = slurm.submit("-n", "1", "-t", "UNLIMITED", "--hold", "--wrap", "true")
    done = slurm.submit("-n", "1", "-t", "1", "--wrap", "true")
    wait_for(lambda: state_of(cli, blocker) == "RUNNING" and state_of(cli, done) == "COMPLETED")
    # The reason a job waits settles after a scheduler pass (Priority, then Resources).
    wait_for(lambda: cli.job(waiting).reason == "Resources", step=0.2)
    states = {kind: b.read_state() for kind, b in kinds.items()}
    assert kinds["rest"].last_source == "rest" and cli.last_source == "cli"
    for state in states.values():
        assert state.total_procs == slurm.cpus and state.free_procs == slurm.cpus - 60
        assert state.partitions == ("debug",)
        jobs = {j.job_id: j for j in state.jobs}
        assert done not in jobs  # finished jobs are not part of the queue
        assert jobs[blocker].state == "RUNNING" and jobs[blocker].procs == 60
        assert jobs[blocker].start is not None and jobs[blocker].tags == {"idempotent": "1", "app": "wrap"}
        assert jobs[waiting].state == "PENDING" and jobs[waiting].procs == 8
        assert jobs[waiting].requested_time == 7 * 60 and jobs[waiting].name == "waiter"
        assert jobs[waiting].start is None and jobs[waiting].user == "root"
        assert jobs[unlimited].held and jobs[unlimited].requested_time == math.inf
    for kind, state in states.items():
        assert state.jobs == states["commands"].jobs, kind
        assert kinds[kind].read_state(partitions=["nosuch"]).total_procs == 0
    # Finished jobs are read explicitly (23.02+'s squeue lists only live ones by default).
    for b in kinds.values():
        assert state_of(b, done) == "COMPLETED"


def test_rest_with_jwt(slurm):
    if not slurm.has_jwt:
        pytest.skip("Slurm's auth/jwt plugin is not installed (slurm-wlm-jwt-plugin)")
    url = slurm.start_restd_jwt()
    b = backend(slurm, rest_url=url, jwt=slurm.token(), jwt_user="root", fallback=False)
    assert b.read_state().total_procs == slurm.cpus and b.last_source == "rest"
    # The newest OpenAPI version this slurmrestd serves and rush knows.
    assert b.rest.api == {"22.05": "v0.0.38", "25.11": "v0.0.44"}[slurm.name], b.rest.api_note
    unauthenticated = backend(slurm, rest_url=url, fallback=False)
    with pytest.raises(RJMSError, match="HTTP 401"):
        unauthenticated.read_state()


def test_rest_down_falls_back_to_commands(slurm):
    b = backend(slurm, **slurm.rest_options())
    strict = backend(slurm, **slurm.rest_options(), fallback=False)
    slurm.stop_restd()
    try:
        state = b.read_state()
        assert b.last_source == "cli" and state.total_procs == slurm.cpus
        assert "cannot connect to slurmrestd" in str(b.last_rest_error)
        with pytest.raises(RJMSError, match="cannot connect to slurmrestd") as err:
            strict.read_state()
        assert err.value.fix and "slurmrestd" in err.value.fix
    finally:
        slurm.start_restd()
    assert strict.read_state().total_procs == slurm.cpus and strict.last_source == "rest"


# -- acting ---------------------------------------------------------------------------------
def priority(slurm, job_id: int) -> int:
    return int(slurm.scontrol_job(job_id)["Priority"])


def test_site_factor_hold_release(slurm, make_backend):
    b = make_backend()
    blocker = slurm.submit("-n", str(slurm.cpus), "-t", "5", "--wrap", "sleep 120")
    waiting = slurm.submit("-n", "4", "-t", "5", "--wrap", "sleep 10")
    wait_for(lambda: state_of(b, blocker) == "RUNNING")
    state = b.read_state()
    assert state.total_procs == slurm.cpus and state.free_procs == 0
    before = priority(slurm, waiting)
    assert b.set_priority(waiting, 4321).ok
    assert job(b, waiting).site_factor == 4321
    # priority/multifactor adds the site factor to the job's priority (never Priority=); the
    # test conf weighs every other factor 0, so the priority is the site factor (1 is the floor).
    after = priority(slurm, waiting)
    assert before == 1 and after == 4321
    assert slurm.run(slurm.tool("sprio"), "-h", "-j", str(waiting), "-o", "%S").stdout.strip() == "4321"
    assert b.hold(waiting).ok and job(b, waiting).held and job(b, waiting).reason.startswith("JobHeld")
    assert b.release(waiting).ok and not job(b, waiting).held
    # A release keeps the site factor; sprio lists the job again a moment after the release.
    wait_for(lambda: job(b, waiting).site_factor == 4321, timeout=10, step=0.2)
    refused = b.set_priority(999999, 5)
    assert not refused.ok and "Invalid job id" in refused.answer


def test_requeue_updates_tags_and_job_finishes(slurm, make_backend):
    b = make_backend()
    # Long enough not to finish before the requeue on a loaded machine.
    running = slurm.submit("-n", "2", "-t", "5", "--comment=rush:idempotent,wtype=io", "--wrap", "sleep 15")
    wait_for(lambda: state_of(b, running) == "RUNNING")
    tags = {**job(b, running).tags, "class": "large", "requeues": "1"}
    result = b.requeue(running, tags)
    assert result.ok and result.answer.startswith("requeue issued"), result.answer
    # Issued, not waited for: the restart count and the tags are there at once.
    issued = job(b, running)
    assert issued.restarts == 1 and issued.tags["class"] == "large"
    # While the old run completes there is nothing to finish yet; then the begin time moves.
    if issued.state == "COMPLETING":
        assert b.finish_requeue(issued) is None
    pending = wait_for(lambda: (j := job(b, running)) and j.state != "COMPLETING" and j)
    finished = b.finish_requeue(pending)
    assert finished is not None and finished.ok, finished
    requeued = wait_for(lambda: (j := job(b, running)) and j.restarts == 1 and j)
    assert requeued.tags == {
        "idempotent": "1",
        "app": "wrap",
        "wtype": "io",
        "class": "large",
        "requeues": "1",
    }
    # Begin time now + 5 s, not Slurm's ~2 min requeue delay: it runs again on the main
    # scheduler's next pass and completes, still requeued exactly once.
    wait_for(lambda: state_of(b, running) == "COMPLETED", timeout=120)
    assert job(b, running).restarts == 1
    [record] = b.accounting([running])
    assert record["state"] == "COMPLETED" and record["restarts"] == 1


def test_requeue_of_pending_job_is_refused(slurm, make_backend):
    b = make_backend()
    blocker = slurm.submit("-n", str(slurm.cpus), "-t", "5", "--wrap", "sleep 120")
    pending = slurm.submit("-n", "2", "-t", "5", "--wrap", "sleep 5")
    wait_for(lambda: state_of(b, blocker) == "RUNNING")
    result = b.requeue(pending, {"class": "large"})
    assert not result.ok and result.answer
    assert job(b, pending).tags == {}  # no tags written when the requeue failed


def test_submit_cancel_and_accounting(slurm, make_backend, tmp_path):
    b = make_backend(jobcomp_file=str(slurm.jobcomp))
    begin = time.time() + 2
    job_id = b.submit(
        name="rush-acct", procs=3, time_limit=90, command=["sh", "-c", "sleep 1; echo 'a;b'"], begin=begin
    )
    submitted = job(b, job_id)
    assert submitted.name == "rush-acct" and submitted.procs == 3 and submitted.requested_time == 120
    record = wait_for(lambda: next(iter(b.accounting([job_id])), None), timeout=60)
    assert record["state"] == "COMPLETED" and record["procs"] == 3 and record["exit_code"] == "0:0"
    assert record["end"] >= record["start"] >= begin - 1 and record["start"] >= record["submit"]
    victim = b.submit(name="victim", procs=1, time_limit=60, command=["sleep", "60"])
    assert b.cancel(victim).ok
    wait_for(lambda: state_of(b, victim) == "CANCELLED")
    # slurmctld forgets jobs after MinJobAge; the jobcomp file still has them.
    from_file = {r["job_id"]: r for r in b.accounting([job_id, victim])}
    assert from_file[job_id]["source"] in ("rest", "cli", "pyslurm")
    # A squeue that knows no jobs stands for a slurmctld that has forgotten them.
    (tmp_path / "squeue").write_text("#!/bin/sh\necho '{\"jobs\": []}'\n")
    (tmp_path / "squeue").chmod(0o755)
    jobcomp_only = get_backend("slurm", bin_dir=str(tmp_path), jobcomp_file=str(slurm.jobcomp))
    [old] = jobcomp_only.accounting([job_id])
    assert old["source"] == "jobcomp" and old["state"] == "COMPLETED" and old["procs"] == 3
    assert abs(old["end"] - record["end"]) <= 1 and abs(old["start"] - record["start"]) <= 1


# -- validation and failures ----------------------------------------------------------------
def test_arguments_are_validated(slurm, tmp_path):
    b = backend(slurm)
    for bad in (0, -3, "12; rm -rf /", True, 1.5):
        with pytest.raises(RJMSError, match="invalid job id"):
            b.hold(bad)
    with pytest.raises(RJMSError, match="invalid site factor"):
        b.set_priority(5, 2**40)
    for name in ("x\nEOF", "a;b", "it's"):
        with pytest.raises(RJMSError, match="unsafe"):
            b.submit(name=name, procs=1, time_limit=60, command=["true"])
    with pytest.raises(RJMSError, match="invalid procs"):
        b.submit(name="x", procs=0, time_limit=60, command=["true"])
    with pytest.raises(RJMSError, match="invalid command"):
        b.submit(name="x", procs=1, time_limit=60, command=["echo", "a\nb"])
    with pytest.raises(RJMSError, match="invalid rush tag"):
        b.requeue(5, {"class": "large; scancel"})
    assert format_tags({"class": "large", "requeues": "2"}) == "rush:class=large;requeues=2"
    assert parse_tags("rush:idempotent=1;wtype=io") == {"idempotent": "1", "wtype": "io"}
    assert parse_tags("someone else's note") == {}
    with pytest.raises(ConfigError, match="unsupported slurmrestd URL"):
        backend(slurm, rest_url="ftp://host")
    with pytest.raises(ConfigError, match="timeout"):
        backend(slurm, timeout=0)
    assert all(j["name"] != "x" for j in slurm.squeue_json())  # nothing was submitted


def test_unreachable_and_garbage_answers(slurm, tmp_path):
    missing = get_backend("slurm", bin_dir=str(tmp_path))
    with pytest.raises(RJMSError, match="squeue not found"):
        missing.read_state()
    no_socket = backend(slurm, rest_url=f"unix:{tmp_path / 'none.sock'}", fallback=False)
    with pytest.raises(RJMSError, match="No such file"):
        no_socket.read_state()
    # Commands that answer garbage (a broken Slurm install), run for real as subprocesses.
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for tool, body in {"squeue": 'echo \'{"jobs": [ {"job_id": \'', "sinfo": "exit 3"}.items():
        script = fake_bin / tool
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    with pytest.raises(RJMSError, match="invalid JSON"):
        get_backend("slurm", bin_dir=str(fake_bin)).read_state()
    (fake_bin / "squeue").write_text('#!/bin/sh\necho \'{"jobs": [{"job_id": 1}]}\'\n')
    with pytest.raises(RJMSError, match="unexpected job record"):
        get_backend("slurm", bin_dir=str(fake_bin)).read_state()
    # slurmctld down: the commands time out or fail; the read fails as a whole.
    slow = get_backend("slurm", **slurm.options(timeout=2))
    slurm.stop_slurmctld()
    try:
        with pytest.raises(RJMSError):
            slow.read_state()
    finally:
        slurm.start_slurmctld()
    assert slow.read_state().total_procs == slurm.cpus


def test_rest_garbage_is_an_error(tmp_path):
    """A stand-in HTTP server (not slurmrestd) answering garbage: the client must not pass it on."""
    answers = iter([(200, b"<html>proxy error</html>"), (200, b'{"jobs": "many"}'), (500, b"{}")])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            # It publishes no OpenAPI paths: rush assumes v0.0.38 and asks for jobs.
            status, body = (404, b"Not Found") if self.path.startswith("/openapi") else next(answers)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        b = get_backend("slurm", rest_url=f"http://127.0.0.1:{server.server_port}", fallback=False)
        with pytest.raises(RJMSError, match="not a JSON object"):
            b.read_state()
        with pytest.raises(RJMSError, match="no list of jobs"):
            b.read_state()
        with pytest.raises(RJMSError, match="HTTP 500"):
            b.read_state()
        assert b.rest.api == "v0.0.38" and b.rest.api_note.startswith("assumed")
    finally:
        server.shutdown()
        server.server_close()


def test_live_records_parse(slurm):
    """The records this Slurm writes, whatever their shapes: a held job, limits in minutes."""
    held = slurm.submit("-n", "2", "-t", "3", "--hold", "--wrap", "true")
    unlimited = slurm.submit("-n", "1", "-t", "UNLIMITED", "--hold", "--wrap", "true")
    b = backend(slurm)
    assert b.job(held).held and b.job(held).requested_time == 180 and b.job(held).procs == 2
    assert b.job(unlimited).requested_time == math.inf and b.job(unlimited).state == "PENDING"
