"""A daemon configuration in a temporary directory, for the daemon tests."""

from __future__ import annotations

import socket
import tempfile

from rush.planner.config import parse_config


def short_socket_path(tmp_path) -> str:
    """A socket path in the test's directory, or a short one beside it (Unix sockets: 107 bytes)."""
    path = str(tmp_path / "query.sock")
    return path if len(path) < 100 else tempfile.mkdtemp(prefix="rushq") + "/query.sock"


def config(tmp_path, **sections):
    raw = {
        "daemon": {
            "journal": str(tmp_path / "journal.sqlite"),
            "cycle_interval": 1,
            "backoff_max": 4,
            # Never the host's /run/rush: each test daemon answers on its own socket.
            "query_socket": short_socket_path(tmp_path),
        },
        "rjms": {
            "backend": "slurm",
            "options": {"rest_url": f"http://127.0.0.1:{closed_port()}", "fallback": False, "timeout": 2},
        },
    }
    for name, values in sections.items():
        raw[name] = {**raw.get(name, {}), **values}
    return parse_config(raw)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there
