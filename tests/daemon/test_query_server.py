"""The daemon's query socket: a real daemon answering ``rush explain`` / ``rush status`` to
another uid (run through setpriv as nobody), by the RJMS's visibility rules, and hostile clients.

nobody runs a copy of rush made where it can read it (tests/daemon/other_uid.py): the checkout
and its .venv may be anywhere, a 0700 home directory included.

The Slurm-with-PrivateData test gives the daemon a ``scontrol`` that prints a configuration with
``PrivateData=jobs`` (the test clusters of tests/slurm/cluster.py have none, and their slurm.conf
is shared by every live test); the parsing of a real ``scontrol show config`` is checked on the
live cluster below.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from rush.daemon.service import Daemon
from rush.planner import query_server
from rush.planner.journal_query import JobNotVisible, VisibilityRules
from rush.planner.query_server import QueryServer, ask, backend_rules, slurm_rules
from tests.daemon.helpers import config
from tests.daemon.other_uid import NobodyRush, install_for_nobody
from tests.planner.journal_query_data import T0, JournalContents, queue_row, write_journal
from tests.polling import wait_for

SCONTROL = (
    "#!/bin/sh\nprintf 'PrivateData             = jobs,usage\\nSlurmUser               = slurm(64030)\\n'\n"
)
needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"
)


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    # pytest's tmp_path is under a 0700 directory nobody cannot cross: the socket lives apart.
    path = Path(tempfile.mkdtemp(prefix="rush-query-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _journal(tmp_path: Path) -> Path:
    queue = [
        queue_row(10, user="nobody", priority=5, estimated_start=T0 + 600, estimate_basis="projection"),
        queue_row(11, user="alice", priority=9, state="running", start=T0 - 60, estimate=900.0),
        queue_row(12, user="nobody", priority=3, waits_behind=11, estimated_start=T0 + 840),
        queue_row(13, user="alice", priority=7),
    ]
    path = write_journal(tmp_path / "journal.sqlite", JournalContents(queue))
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def nobody_rush() -> Iterator[NobodyRush]:
    """rush as nobody can run it: the commands below, copied where nobody can read them."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv")
    try:
        rush = install_for_nobody([["explain", "1", "--socket", "/nonexistent", "--json"], ["status"]])
    except RuntimeError as exc:
        pytest.skip(str(exc))
    yield rush
    rush.remove()


@needs_root
def test_daemon_answers_another_uid_only_what_it_may_see(
    tmp_path: Path, socket_dir: Path, nobody_rush: NobodyRush
) -> None:
    journal = _journal(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    sock = socket_dir / "query.sock"
    settings = config(tmp_path, daemon={"journal": str(journal), "query_socket": str(sock)})
    settings.rjms.options["bin_dir"] = str(bin_dir)
    daemon = Daemon(settings)
    runner = threading.Thread(target=daemon.run, kwargs={"serve_queries": True})
    runner.start()
    try:
        wait_for(sock.exists, timeout=30, step=0.05)
        assert sock.stat().st_mode & 0o777 == 0o666
        # nobody cannot read the journal itself...
        direct = nobody_rush.run("explain", "10", "--journal", str(journal))
        assert direct.returncode == 2 and str(journal) in direct.stderr, direct.stderr
        # ...but asks the daemon: its own job, with its rank among every pending job.
        own = nobody_rush.run("explain", "10", "--socket", str(sock), "--json")
        assert own.returncode == 0, own.stderr
        view = json.loads(own.stdout)
        assert (view["row"]["user"], view["rank"], view["pending"]) == ("nobody", 2, 3)
        # alice's job: refused (Slurm's PrivateData=jobs), exit 1.
        other = nobody_rush.run("explain", "13", "--socket", str(sock))
        assert other.returncode == 1 and "PrivateData=jobs" in other.stderr and "alice" not in other.stdout
        # The job nobody's waits behind is alice's: its end, not its id.
        behind = json.loads(nobody_rush.run("explain", "12", "--socket", str(sock), "--json").stdout)
        assert behind["waits_behind"] == {"job_id": None, "state": "running", "predicted_end": T0 - 60 + 900}
        status = nobody_rush.run("status", "--socket", str(sock), "--json")
        assert [s["job_id"] for s in json.loads(status.stdout)] == [10, 12]
        assert "alice" not in nobody_rush.run("status", "--socket", str(sock)).stdout
        missing = nobody_rush.run("explain", "99", "--socket", str(sock))
        assert missing.returncode == 1 and "job 99 is not in rush's journal" in missing.stderr
        # root sees alice's job through the same socket.
        assert ask(sock, {"op": "explain", "job": 13})["row"]["user"] == "alice"
    finally:
        daemon.stop()
        runner.join(timeout=60)
    assert not runner.is_alive()
    assert not sock.exists()


@pytest.fixture
def server(tmp_path: Path, socket_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[QueryServer]:
    monkeypatch.setattr(query_server, "CONNECTION_SECONDS", 0.5)
    rules = VisibilityRules("slurm", private_jobs=True)
    srv = QueryServer(socket_dir / "q.sock", _journal(tmp_path), lambda: rules).start()
    yield srv
    srv.close()


def _raw(path: Path, payload: bytes, shut: bool = True) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(path))
        try:
            s.sendall(payload)
            if shut:
                s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may close first on an oversize request
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:  # closed with the oversize request unread: the answer may be lost
            return {"ok": False, "error": "bad_request", "reset": True}
    return json.loads(data)


HOSTILE = [
    b"x" * 100_000,  # longer than a request may be, no newline
    b"{not json}\n",
    b"[1, 2]\n",
    b"[" * 4000 + b"\n",  # nesting deeper than the parser's recursion
    b'{"op": "explain", "job": "10"}\n',
    b'{"op": "explain", "job": true}\n',
    b'{"op": "explain", "job": 1180591620717411303424}\n',
    b'{"op": "explain", "job": -1}\n',
    b'{"op": "status", "user": ["root"]}\n',
    b'{"op": "drop table"}\n',
    b"\xff\xfe\n",
    b"",  # connects and says nothing
]


@pytest.mark.parametrize("payload", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_requests_are_answered_and_the_server_goes_on(server: QueryServer, payload: bytes) -> None:
    answer = _raw(server.path, payload)
    assert answer["ok"] is False and answer["error"] == "bad_request"
    assert ask(server.path, {"op": "explain", "job": 10})["job_id"] == 10


def test_silent_client_delays_others_at_most_its_deadline(server: QueryServer) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as idle:
        idle.connect(str(server.path))  # holds the connection open, sends nothing
        assert [s["job_id"] for s in ask(server.path, {"op": "status", "user": None}, timeout=10)] == [
            13,
            10,
            12,
            11,
        ]


def test_root_caller_and_refusal_as_error(server: QueryServer) -> None:
    # This process is the caller: as root it sees all; the refusal path is the other uid's.
    if os.geteuid() != 0:
        with pytest.raises(JobNotVisible):
            ask(server.path, {"op": "explain", "job": 13})
    else:
        assert ask(server.path, {"op": "explain", "job": 13})["row"]["user"] == "alice"


def test_socket_path_refusals(tmp_path: Path, server: QueryServer) -> None:
    from rush.errors import ConfigError

    regular = tmp_path / "file"
    regular.write_text("keep me")
    with pytest.raises(ConfigError, match="not a socket"):
        QueryServer(regular, tmp_path / "j", lambda: VisibilityRules("slurm"))
    assert regular.read_text() == "keep me"
    with pytest.raises(ConfigError, match="another process answers"):
        QueryServer(server.path, tmp_path / "j", lambda: VisibilityRules("slurm"))
    # A stale socket file (its server gone) is replaced.
    stale = tmp_path / "stale.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(stale))
    QueryServer(stale, tmp_path / "j", lambda: VisibilityRules("slurm")).close()


def test_slurm_rules_from_scontrol_and_sacctmgr() -> None:
    text = "PrivateData             = jobs,usage\nSlurmUser               = slurm(64030)\nOther = x\n"
    rules = slurm_rules(text, "root|Administrator\nnobody|Operator\ndaemon|None\n")
    assert rules.private_jobs and rules.privileged == frozenset({0, 64030, 65534})
    assert not slurm_rules("PrivateData             = usage,users\n").private_jobs
    assert not slurm_rules("PrivateData             = none\nSlurmUser = root(0)\n").private_jobs


def test_rules_unreadable_are_strict(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text("#!/bin/sh\necho 'slurm_load_ctl_conf error' >&2\nexit 1\n")
    (bin_dir / "scontrol").chmod(0o755)
    settings = config(tmp_path)
    settings.rjms.options["bin_dir"] = str(bin_dir)
    from rush.planner.plan import make_backend

    backend = make_backend(settings)
    assert backend_rules(backend) == VisibilityRules("slurm", private_jobs=True)


def test_live_slurm_config_read(slurm_cluster) -> None:
    from rush.planner.plan import make_backend

    settings = config(Path(slurm_cluster.dir), rjms={"backend": "slurm", "options": slurm_cluster.options()})
    rules = backend_rules(make_backend(settings))
    # The test cluster: no PrivateData, SlurmUser=root.
    assert rules == VisibilityRules("slurm", private_jobs=False, privileged=frozenset({0}))
