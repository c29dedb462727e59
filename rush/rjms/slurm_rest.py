"""A small slurmrestd client: read the queue, update and cancel jobs, on whatever OpenAPI
version the daemon serves.

The version is negotiated once: rush asks slurmrestd what it serves (``GET /openapi/v3``,
whose paths list ``/slurm/v0.0.NN/jobs`` for every loaded data_parser) and takes the newest
it knows (:data:`KNOWN_APIS`: v0.0.44 (25.11) down to v0.0.38 (22.05)); ``api`` pins one
instead. What differs between versions is the record shapes, read by
:mod:`rush.rjms.slurm_json`, and the keys of a job update, which :meth:`SlurmREST.can`
answers from :data:`FEATURES`.

``url`` is ``unix:/path/to/slurmrestd.sock`` (rest_auth/local: the daemon trusts the
connecting process's uid) or ``http(s)://host:port`` (rest_auth/jwt: every request carries
``X-SLURM-USER-NAME`` and ``X-SLURM-USER-TOKEN``). Unix sockets go through a tiny
``requests`` adapter, so there is no extra dependency. Every failure (refused connection,
timeout, HTTP error, error list in the answer, non-JSON, an answer over the size cap)
raises :class:`RJMSError` on reads; an action Slurm refused is a failed :class:`ActionResult`.
"""

from __future__ import annotations

import getpass
import json
import re
import socket
import time
from pathlib import Path
from typing import Any

import requests
import urllib3
from requests.adapters import HTTPAdapter

from rush.errors import ConfigError, RJMSError
from rush.rjms.base import ActionResult

# Newest first: the order of preference. v0.0.38: Slurm 22.05's; v0.0.39 (23.02) and v0.0.40
# (23.11) are read by the same shape rules but not run in rush's tests; v0.0.41 .. v0.0.44:
# 24.05 .. 25.11, all four served by 25.11 (26.05 drops v0.0.41).
KNOWN_APIS = ("v0.0.44", "v0.0.43", "v0.0.42", "v0.0.41", "v0.0.40", "v0.0.39", "v0.0.38")
LEGACY_API = "v0.0.38"
# Job-update keys beyond hold/nice/cancel, by version. ``site_factor`` is taken raw by
# v0.0.41+ (the client adds Slurm's NICE_OFFSET, 2**31, as scontrol does); GET never shows it.
FEATURES: dict[str, frozenset[str]] = {
    api: frozenset({"site_factor", "admin_comment", "begin_time"}) for api in KNOWN_APIS[:4]
}
_API_PATH = re.compile(r"^/slurm/(v\d+\.\d+\.\d+)/jobs/?$")
UNIX_PREFIX = "http+unix://slurmrestd"
# An answer larger than this is refused (rjms.options.max_answer_mb); read in 1 MiB chunks.
DEFAULT_MAX_ANSWER = 512 * 2**20
CHUNK = 2**20


class _UnixConnection(urllib3.connection.HTTPConnection):
    def __init__(self, socket_path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self.socket_path = socket_path
        self.unix_timeout = timeout

    def _new_conn(self) -> socket.socket:  # urllib3 1.26 and 2.x both connect through this
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.unix_timeout)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        return sock


class _UnixPool(urllib3.HTTPConnectionPool):
    def __init__(self, socket_path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout, maxsize=2)
        self.socket_path = socket_path
        self.unix_timeout = timeout

    def _new_conn(self) -> _UnixConnection:
        return _UnixConnection(self.socket_path, self.unix_timeout)


class UnixSocketAdapter(HTTPAdapter):
    """Send ``http+unix://slurmrestd/...`` requests to one Unix socket."""

    def __init__(self, socket_path: str, timeout: float) -> None:
        super().__init__(max_retries=0)
        self.pool = _UnixPool(socket_path, timeout)

    def get_connection(self, url: str, proxies: dict | None = None) -> _UnixPool:
        return self.pool

    def get_connection_with_tls_context(self, request, verify, proxies=None, cert=None) -> _UnixPool:
        return self.pool

    def request_url(self, request, proxies) -> str:
        return request.path_url

    def close(self) -> None:
        self.pool.close()
        super().close()


class SlurmREST:
    """JSON from and to slurmrestd; see the module docstring for ``url`` and authentication."""

    def __init__(
        self,
        url: str,
        *,
        jwt: str = "",
        jwt_file: str = "",
        user: str = "",
        timeout: float = 20.0,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER,
        api: str = "auto",
    ) -> None:
        if api != "auto" and api not in KNOWN_APIS:
            raise ConfigError(
                f"unknown slurmrestd OpenAPI version {api!r}",
                where="rjms.options.rest_api",
                fix=f"auto (ask slurmrestd) or one of {', '.join(KNOWN_APIS)}",
            )
        self.url = url
        # None until negotiated; then the version used for every request.
        self.api: str | None = None if api == "auto" else api
        # How the version was chosen, for the journal and for error messages.
        self.api_note = "" if api == "auto" else "set by rjms.options.rest_api"
        self.timeout = float(timeout)
        self.max_answer_bytes = int(max_answer_bytes)
        self.jwt = jwt
        self.jwt_file = Path(jwt_file) if jwt_file else None
        self.user = user or getpass.getuser()
        self.session = requests.Session()
        self.session.trust_env = False  # no proxies from the environment for a local daemon
        if url.startswith("unix:"):
            path = url[len("unix:") :]
            if not path.startswith("/"):
                raise ConfigError(
                    f"slurmrestd socket path must be absolute: {url!r}",
                    where="rjms.options.rest_url",
                    fix="write unix:/run/slurmrestd/slurmrestd.socket",
                )
            self.base = UNIX_PREFIX
            self.session.mount(UNIX_PREFIX, UnixSocketAdapter(path, self.timeout))
        elif url.startswith(("http://", "https://")):
            self.base = url.rstrip("/")
        else:
            raise ConfigError(
                f"unsupported slurmrestd URL {url!r}",
                where="rjms.options.rest_url",
                fix="use unix:/path/to/slurmrestd.socket or http://host:6820",
            )

    def _headers(self) -> dict[str, str]:
        token = self.jwt
        if self.jwt_file is not None:
            try:  # read each time: tokens are rotated by an outside job
                token = self.jwt_file.read_text().strip().removeprefix("SLURM_JWT=")
            except (OSError, UnicodeDecodeError) as exc:
                raise RJMSError(
                    f"cannot read the JWT file ({getattr(exc, 'strerror', None) or exc})",
                    where=str(self.jwt_file),
                    fix="write a token from `scontrol token username=USER lifespan=N` there",
                ) from exc
        if not token:
            return {}
        return {"X-SLURM-USER-NAME": self.user, "X-SLURM-USER-TOKEN": token}

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, object, str]:
        """(HTTP status, decoded JSON or None, text head) of one request.

        Transport failures (refused, timeout, an answer too big or too slow to arrive) raise
        :class:`RJMSError`: Slurm's answer is unknown. The body is read in chunks against a
        size cap and a whole-answer deadline, so a hostile or broken peer cannot make rush
        hold unbounded memory or wait forever.
        """
        where = f"{self.url} {method} {path}"
        deadline = time.monotonic() + self.timeout
        try:
            answer = self.session.request(
                method,
                f"{self.base}{path}",
                headers=self._headers(),
                json=body,
                timeout=self.timeout,
                stream=True,
            )
            with answer:
                chunks, size = [], 0
                for chunk in answer.iter_content(CHUNK):
                    size += len(chunk)
                    if size > self.max_answer_bytes:
                        raise RJMSError(
                            f"slurmrestd's answer exceeds {self.max_answer_bytes / 2**20:g} MiB",
                            where=where,
                            fix="raise rjms.options.max_answer_mb if the queue is really this large",
                        )
                    if time.monotonic() > deadline:
                        raise requests.Timeout("the answer did not arrive in time")
                    chunks.append(chunk)
                raw = b"".join(chunks)
        except requests.Timeout as exc:
            raise RJMSError(
                f"slurmrestd did not answer within {self.timeout:g} s",
                where=where,
                fix="is slurmrestd or slurmctld overloaded? rush retries next cycle; for a large queue raise "
                "rjms.options.timeout (slurmrestd answered 10 000 jobs in 5-6 s on a test host)",
            ) from exc
        except (requests.RequestException, OSError) as exc:
            raise RJMSError(
                f"cannot connect to slurmrestd ({_root_cause(exc)})",
                where=where,
                fix="start slurmrestd or fix rjms.options.rest_url",
            ) from exc
        try:
            # A stray non-UTF-8 byte (a job name in Latin-1) must not blind the daemon to the
            # whole queue: it becomes U+FFFD, as on the command-line path.
            data = json.loads(raw.decode("utf-8", "replace"))
        except (ValueError, RecursionError):  # not JSON, or nested absurdly deep
            data = None
        return answer.status_code, data, raw[:200].decode("utf-8", "replace").strip()

    # -- the OpenAPI version -----------------------------------------------------------------
    def negotiate(self) -> str:
        """The OpenAPI version to use: the newest of :data:`KNOWN_APIS` that slurmrestd serves.

        Asked once (``GET /openapi/v3``) and kept. A slurmrestd that does not publish its
        paths (404, not JSON: a proxy in front of it) is taken to serve v0.0.38 (22.05's),
        which a request then confirms or refutes with a clear error; pin ``rest_api`` there.
        Transport failures raise :class:`RJMSError` and are asked again next time.
        """
        if self.api is not None:
            return self.api
        where = f"{self.url} GET /openapi/v3"
        status, data, text = self._request("GET", "/openapi/v3")
        if status in (401, 403):
            raise RJMSError(
                f"slurmrestd answered HTTP {status}: {_errors(data) or text}",
                where=where,
                fix="check rest_auth and the JWT (scontrol token)",
            )
        if status not in (200, 404):  # slurmrestd's own trouble: ask again next time
            raise RJMSError(
                f"slurmrestd answered HTTP {status}: {_errors(data) or text}",
                where=where,
                fix="check slurmrestd's log; rush retries next cycle",
            )
        paths = data.get("paths") if status == 200 and isinstance(data, dict) else None
        if not isinstance(paths, dict):
            self.api, self.api_note = LEGACY_API, f"assumed: /openapi/v3 answered HTTP {status} without paths"
            return self.api
        served = sorted({m.group(1) for p in paths if isinstance(p, str) and (m := _API_PATH.match(p))})
        usable = [api for api in KNOWN_APIS if api in served]
        if not usable:
            raise RJMSError(
                f"slurmrestd serves OpenAPI {', '.join(served) or 'no Slurm jobs endpoint'}; "
                f"rush knows {', '.join(KNOWN_APIS)}",
                where=where,
                fix="load a data_parser rush knows (slurmrestd -s openapi/slurmctld -d data_parser/v0.0.44) "
                "or update rush",
            )
        self.api, self.api_note = usable[0], f"negotiated: slurmrestd serves {', '.join(served)}"
        return self.api

    def can(self, feature: str) -> bool:
        """Whether the negotiated version takes ``feature`` in a job update (``site_factor``...)."""
        return feature in FEATURES.get(self.negotiate(), frozenset())

    def get(self, endpoint: str) -> dict[str, Any]:
        """GET ``/slurm/<version>/<endpoint>`` and return the decoded answer."""
        api = self.negotiate()
        where = f"{self.url} /slurm/{api}/{endpoint}"
        status, data, text = self._request("GET", f"/slurm/{api}/{endpoint}")
        if status != 200:
            detail = _errors(data) or text
            fix = "check rest_auth and the JWT (scontrol token)" if status in (401, 403) else None
            if status == 404 and self.api_note.startswith("assumed"):
                fix = f"slurmrestd did not say which OpenAPI it serves ({self.api_note}): set rjms.options.rest_api"
            raise RJMSError(
                f"slurmrestd answered HTTP {status}: {detail}",
                where=where,
                fix=fix or "check slurmrestd's log",
            )
        if not isinstance(data, dict):
            raise RJMSError(
                "slurmrestd answered with something that is not a JSON object",
                where=where,
                fix=f"is this slurmrestd, serving openapi {api}?",
            )
        if errors := _errors(data):
            raise RJMSError(
                f"slurmrestd reported: {errors}", where=where, fix="check slurmctld (scontrol ping)"
            )
        return data

    def act(self, method: str, endpoint: str, body: dict[str, Any] | None = None) -> ActionResult:
        """POST/DELETE an action. Slurm's refusal (HTTP 500 with an error list, 401...) is a
        failed :class:`ActionResult` for the journal; no answer at all raises RJMSError."""
        status, data, text = self._request(method, f"/slurm/{self.negotiate()}/{endpoint}", body)
        errors = _errors(data)
        if status == 200 and isinstance(data, dict) and not errors:
            return ActionResult(ok=True, answer=f"slurmrestd {method} {endpoint}: ok")
        return ActionResult(
            ok=False, answer=f"slurmrestd {method} {endpoint}: HTTP {status}: {errors or text or 'no detail'}"
        )

    def close(self) -> None:
        self.session.close()


def _errors(data: object) -> str:
    if not isinstance(data, dict):
        return ""
    items = data.get("errors") or []
    texts = []
    for item in items if isinstance(items, list) else [items]:
        if isinstance(item, dict):
            texts.append(str(item.get("error") or item.get("description") or item.get("error_number")))
        else:
            texts.append(str(item))
    return "; ".join(texts)[:500]  # a journal line, not a dump of whatever came back


def _root_cause(exc: BaseException) -> str:
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return str(exc) or type(exc).__name__
