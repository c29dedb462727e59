"""A daemon configuration in a temporary directory, for the daemon tests."""

from __future__ import annotations

import socket

from rush.planner.config import parse_config


def config(tmp_path, **sections):
    raw = {
        "daemon": {"journal": str(tmp_path / "journal.sqlite"), "cycle_interval": 1, "backoff_max": 4},
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
