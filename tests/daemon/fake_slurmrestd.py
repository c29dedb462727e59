"""A stand-in for slurmrestd (openapi/v0.0.38) on a localhost TCP port, for answers the real one
never gives (garbage, HTML, 500s, slow or huge bodies) and for hosts where Slurm is not running.

Faithful to the wire format seen from Debian's slurmrestd 22.05.8: ``GET /slurm/v0.0.38/jobs``
and ``/nodes`` answer ``{"meta": ..., "errors": [], "jobs"|"nodes": [...]}`` with the record
fields rush reads; ``POST /slurm/v0.0.38/job/N`` takes a JSON body of sbatch-like keys and
answers 200 with an empty error list, or 500 with ``errors: [{"error": ..., "error_number": ...}]``
for an unknown job; ``DELETE /slurm/v0.0.38/job/N`` cancels. Requests are recorded.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

META = {"plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"}}


def job_record(job_id: int, state: str = "PENDING", **fields: Any) -> dict[str, Any]:
    """A job record with the fields (and types) slurmrestd 22.05 writes."""
    now = int(time.time())
    record = {
        "job_id": job_id,
        "job_state": state,
        "submit_time": now - 60,
        "start_time": now - 30 if state == "RUNNING" else 0,
        "end_time": 0,
        "time_limit": 5,
        "cpus": 2,
        "user_name": "root",
        "account": "",
        "partition": "debug",
        "name": f"job{job_id}",
        "admin_comment": "",
        "state_reason": "None" if state == "RUNNING" else "Resources",
        "restart_cnt": 0,
        "nice": None,
        "priority": 1,
    }
    record.update(fields)
    return record


def node_record(cpus: int = 8, alloc: int = 8, **fields: Any) -> dict[str, Any]:
    record = {
        "name": "n1",
        "cpus": cpus,
        "alloc_cpus": alloc,
        "state": "allocated" if alloc else "idle",
        "state_flags": [],
        "partitions": ["debug"],
    }
    record.update(fields)
    return record


def body(**lists: Any) -> bytes:
    return json.dumps({"meta": META, "errors": [], **lists}).encode()


class FakeSlurmrestd:
    """``answers[path] = (status, bytes)`` or a callable returning it; ``delay`` per path."""

    def __init__(self) -> None:
        self.jobs: list[dict[str, Any]] = []
        self.nodes: list[dict[str, Any]] = [node_record()]
        self.answers: dict[str, Any] = {}
        self.delays: dict[str, float] = {}
        self.trickle: dict[str, float] = {}
        self.short: set[str] = set()  # paths whose Content-Length promises more than is sent
        self.requests: list[tuple[str, str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self, method: str) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                payload = json.loads(raw) if raw else None
                fake.requests.append((method, self.path, payload))
                path = self.path.removeprefix("/slurm/v0.0.38/")
                time.sleep(fake.delays.get(path, 0))
                status, data = fake.answer(method, path, payload)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data) + (1000 if path in fake.short else 0)))
                if path in fake.short:
                    self.close_connection = True
                self.end_headers()
                step = fake.trickle.get(path)
                try:
                    if step:  # a peer that sends one byte at a time, forever slow
                        for i in range(len(data)):
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                            time.sleep(step)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._answer("GET")

            def do_POST(self) -> None:
                self._answer("POST")

            def do_DELETE(self) -> None:
                self._answer("DELETE")

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def answer(self, method: str, path: str, payload: Any) -> tuple[int, bytes]:
        fixed = self.answers.get(path)
        if fixed is not None:
            return fixed(method, payload) if callable(fixed) else fixed
        if method == "GET" and path == "jobs":
            return 200, body(jobs=self.jobs)
        if method == "GET" and path == "nodes":
            return 200, body(nodes=self.nodes)
        if path.startswith("job/"):
            job_id = int(path.split("/")[1].split("?")[0])
            found = [j for j in self.jobs if j["job_id"] == job_id]
            if not found:
                error = {"error": "Invalid job id specified", "error_number": 2017}
                return 500, json.dumps({"meta": META, "errors": [error]}).encode()
            job = found[0]
            if method == "DELETE":
                job["job_state"] = "CANCELLED"
            elif payload.get("hold") is True:
                job["state_reason"] = "JobHeldAdmin"
            elif payload.get("hold") is False:
                job["state_reason"] = "None"
            elif "nice" in payload:
                job["nice"] = payload["nice"] % 2**32  # printed as a 32-bit unsigned number
            return 200, body()
        return 404, b"Not Found"

    def __enter__(self) -> FakeSlurmrestd:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
