"""The daemon's query socket: ``rush explain`` and ``rush status`` for users who cannot read the
journal (root/rush-owned, mode 0600).

A Unix stream socket (``daemon.query_socket``, mode 0666). A request is one JSON object on one
line, at most :data:`MAX_REQUEST` bytes: ``{"op": "explain", "job": N}`` or ``{"op": "status",
"user": NAME | null}``. The answer is one JSON line: ``{"ok": true, "result": ...}`` or ``{"ok":
false, "error": KIND, "message": TEXT}`` with KIND ``not_found``, ``refused``, ``bad_request`` or
``unavailable``.

The caller is the uid the kernel gives for the connection (``SO_PEERCRED``), never a name in the
request, and is answered only what that uid may see under the RJMS's rules
(:func:`rush.planner.journal_query.may_see`). Each connection is bounded: its request size, a
deadline for reading and writing it, and the journal query itself (bounded history); connections
are served one at a time by one thread, so a flood waits in the listen backlog instead of
multiplying threads. A bad request is answered and logged; nothing a client sends stops the
server or the daemon.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rush.errors import ConfigError, RushError
from rush.planner.journal_query import (
    JobNotFound,
    JobNotVisible,
    JournalQuery,
    Viewer,
    VisibilityRules,
    status_json,
)

log = logging.getLogger("rush.daemon.query")

MAX_REQUEST = 4096  # bytes of one request line
MAX_ANSWER = 64 * 1024 * 1024  # bytes a client reads at most (status of a very large queue)
CONNECTION_SECONDS = 5.0  # to read a request and write its answer
MAX_JOB_ID = 2**63 - 1
RULES_TTL = 300.0  # seconds the RJMS's visibility rules are kept before they are read again
_PEERCRED = struct.Struct("3i")


class QueryServer:
    """Answers explain/status requests on a Unix socket in a background thread."""

    def __init__(self, path: str | Path, journal: str | Path, rules: Callable[[], VisibilityRules]) -> None:
        self.path = Path(path)
        self.journal = Path(journal)
        self._read_rules = rules
        self._rules: tuple[float, VisibilityRules] | None = None
        self.sock = _bind(self.path)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="rush-query", daemon=True)

    def start(self) -> QueryServer:
        self.thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        if self.thread.ident is not None:
            self.thread.join(timeout=CONNECTION_SECONDS + 1)
        try:
            if stat.S_ISSOCK(self.path.lstat().st_mode):
                self.path.unlink()
        except OSError:
            pass

    def rules(self) -> VisibilityRules:
        now = time.monotonic()
        if self._rules is None or now - self._rules[0] > RULES_TTL:
            self._rules = (now, self._read_rules())
        return self._rules[1]

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                if self._stop.is_set():
                    return
                log.exception("query socket accept failed")
                time.sleep(0.1)  # e.g. out of file descriptors: do not spin
                continue
            with conn:
                try:
                    self._handle(conn)
                except Exception:  # a client must never stop the server
                    log.exception("query request failed")

    def _handle(self, conn: socket.socket) -> None:
        deadline = time.monotonic() + CONNECTION_SECONDS
        _, uid, _ = _PEERCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))
        try:
            request = _read_request(conn, deadline)
            answer = {"ok": True, "result": self.answer(request, _viewer(uid))}
        except BadRequest as exc:
            log.warning("query from uid %d refused: %s", uid, exc.message)
            answer = {"ok": False, "error": "bad_request", "message": exc.message}
        except JobNotFound as exc:
            answer = {"ok": False, "error": "not_found", "message": str(exc)}
        except JobNotVisible as exc:
            answer = {"ok": False, "error": "refused", "message": str(exc)}
        except RushError as exc:
            log.warning("query from uid %d: %s", uid, exc)
            answer = {"ok": False, "error": "unavailable", "message": str(exc)}
        data = json.dumps(answer, default=str).encode() + b"\n"
        conn.settimeout(max(deadline - time.monotonic(), 0.1))
        try:
            conn.sendall(data)
        except OSError as exc:  # the client left or stopped reading
            log.info("query answer to uid %d not delivered: %s", uid, exc)

    def answer(self, request: dict[str, Any], viewer: Viewer) -> Any:
        op = request.get("op")
        with JournalQuery(self.journal) as query:
            if op == "explain":
                job = request.get("job")
                if isinstance(job, bool) or not isinstance(job, int) or not 0 <= job <= MAX_JOB_ID:
                    raise BadRequest(f"job must be a job id (an integer >= 0), not {str(job)[:40]!r}")
                return query.job_view(job, viewer, self.rules()).to_json()
            if op == "status":
                user = request.get("user")
                if user is not None and (not isinstance(user, str) or len(user) > 256):
                    raise BadRequest("user must be a user name (a string of at most 256 characters)")
                return status_json(query.queue_view(viewer, self.rules(), user))
        raise BadRequest(f"op must be explain or status, not {str(op)[:40]!r}")


class BadRequest(RushError):
    """A request that is not one of the two questions."""


def ask(path: str | Path, request: dict[str, Any], timeout: float = 30.0) -> Any:
    """Send one request to the daemon's socket; its result, or the error it answered as a
    RushError (JobNotFound, JobNotVisible, or RushError)."""
    where = str(path)
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(str(path))
            sock.sendall(json.dumps(request).encode() + b"\n")
            data = bytearray()
            while len(data) <= MAX_ANSWER:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    break
                data += chunk
    except FileNotFoundError as exc:
        raise ConfigError(
            "no query socket here: is the rush daemon running?",
            where=where,
            fix="give the daemon's daemon.query_socket with --socket (default /run/rush/query.sock), "
            "or --journal if you can read the journal",
        ) from exc
    except OSError as exc:
        raise RushError(
            f"cannot ask the rush daemon: {exc}", where=where, fix="check that the daemon is running"
        ) from exc
    try:
        answer = json.loads(bytes(data))
    except ValueError as exc:
        raise RushError("the daemon's answer is not JSON (cut short?)", where=where) from exc
    if answer.get("ok"):
        return answer.get("result")
    kind = {"not_found": JobNotFound, "refused": JobNotVisible}.get(answer.get("error"), RushError)
    raise kind(str(answer.get("message")), where=where if kind is RushError else None)


def _read_request(conn: socket.socket, deadline: float) -> dict[str, Any]:
    data = bytearray()
    while b"\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            raise BadRequest(f"no complete request line within {CONNECTION_SECONDS:.0f} s")
        conn.settimeout(left)
        try:
            chunk = conn.recv(MAX_REQUEST + 1 - len(data))
        except TimeoutError as exc:
            raise BadRequest(f"no complete request line within {CONNECTION_SECONDS:.0f} s") from exc
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST:
            raise BadRequest(f"request longer than {MAX_REQUEST} bytes")
    try:
        request = json.loads(bytes(data).split(b"\n", 1)[0])
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"request is not JSON: {str(exc)[:80]}") from exc
    if not isinstance(request, dict):
        raise BadRequest("request must be a JSON object")
    return request


def _viewer(uid: int) -> Viewer:
    try:
        return Viewer(uid, pwd.getpwuid(uid).pw_name)
    except KeyError:
        return Viewer(uid, None)  # a uid without a passwd entry sees only jobs owned by that uid


def _bind(path: Path) -> socket.socket:
    """A listening socket at ``path``; a stale socket file is replaced, anything else refused."""
    where = "daemon.query_socket"
    if len(os.fsencode(path)) > 107:
        raise ConfigError(
            f"{path} is longer than a Unix socket path may be (107 bytes)", where=where, fix="a shorter path"
        )
    if path.exists() or path.is_symlink():
        if not stat.S_ISSOCK(path.lstat().st_mode):
            raise ConfigError(f"{path} exists and is not a socket", where=where, fix="another path")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            if probe.connect_ex(str(path)) == 0:
                raise ConfigError(
                    f"another process answers on {path} (a second rush daemon?)",
                    where=where,
                    fix="stop it, or give this daemon another query_socket",
                )
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        sock.bind(str(path))
        # Anyone may connect: what they are told depends on their kernel-verified uid.
        os.chmod(path, 0o666)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot serve queries on {path}: {exc}", where=where, fix="check the directory"
        ) from exc
    return sock


# -- the RJMS's visibility rules --------------------------------------------------------------
def slurm_rules(config_text: str, admins_text: str = "") -> VisibilityRules:
    """Rules from ``scontrol show config`` (PrivateData, SlurmUser) and ``sacctmgr -n -P show
    user format=user,adminlevel`` (operators and administrators see every job)."""
    settings = {}
    for line in config_text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            settings[key.strip().lower()] = value.strip()
    private = "jobs" in {p.strip().lower() for p in settings.get("privatedata", "").split(",")}
    privileged = {0}
    slurm_user = settings.get("slurmuser", "")
    if "(" in slurm_user and slurm_user.endswith(")"):
        uid = slurm_user[slurm_user.index("(") + 1 : -1]
        if uid.isdigit():
            privileged.add(int(uid))
    for line in admins_text.splitlines():
        name, _, level = line.partition("|")
        if level.strip().lower() in ("operator", "administrator"):
            try:
                privileged.add(pwd.getpwnam(name.strip()).pw_uid)
            except KeyError:
                pass  # an accounting user without a local account cannot connect anyway
    return VisibilityRules("slurm", private_jobs=private, privileged=frozenset(privileged))


def backend_rules(backend: object) -> VisibilityRules:
    """The rules of the daemon's RJMS, read through its backend. When they cannot be read
    the answer is the strict one (only one's own jobs), logged: never more than the RJMS shows."""
    cli = getattr(backend, "cli", None)
    if cli is not None:  # Slurm through its commands
        try:
            out = cli.run("scontrol", "show", "config")
            if out.returncode != 0:
                raise RushError(out.stderr.strip()[:200] or f"exit status {out.returncode}")
            admins = ""
            if cli.has("sacctmgr"):
                listed = cli.run("sacctmgr", "-n", "-P", "show", "user", "format=user,adminlevel")
                admins = listed.stdout if listed.returncode == 0 else ""
            return slurm_rules(out.stdout, admins)
        except (RushError, OSError) as exc:
            log.warning("cannot read Slurm's PrivateData (%s): users see only their own jobs", exc)
            return VisibilityRules("slurm", private_jobs=True)
    handle = getattr(backend, "handle", None) if type(backend).__name__ == "FluxBackend" else None
    if handle is not None:
        try:
            owner = int(handle.attr_get("security.owner"))
        except Exception as exc:  # the broker's answer, whatever it is
            log.warning("cannot read the Flux instance owner (%s): only root sees every job", exc)
            owner = 0
        return VisibilityRules("flux", privileged=frozenset({0, owner}))
    log.warning("no visibility rules for %s: users see only their own jobs", type(backend).__name__)
    return VisibilityRules("slurm", private_jobs=True)
