"""rush's Flux scheduler module for the Flux tests: its path and a rush.toml to load it with."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE = ROOT / "rush" / "flux_module" / "sched-rush.py"


def write_config(tmp_path: Path, policy: dict | None = None, extra: str = "", interval: float = 2) -> Path:
    settings = {"policy": "FCFS", "backfill": "easy", "wait_quantum": 0, **(policy or {})}
    lines = [f"{k} = {json.dumps(v)}" for k, v in settings.items()]
    path = tmp_path / "rush.toml"
    path.write_text(
        f'[daemon]\ncycle_interval = {interval}\njournal = "{tmp_path / "journal.sqlite"}"\n\n'
        "[policy]\n" + "\n".join(lines) + "\n\n" + extra + '\n[rjms]\nbackend = "flux"\n'
    )
    return path


def decisions(tmp_path: Path, action: str | None = None) -> list[dict]:
    """The journal's decisions (of one action), oldest first, from a module loaded with write_config."""
    con = sqlite3.connect(tmp_path / "journal.sqlite")
    con.row_factory = sqlite3.Row
    query = "SELECT * FROM decisions" + (" WHERE action = ?" if action else "") + " ORDER BY id"
    rows = [dict(r) for r in con.execute(query, (action,) if action else ())]
    con.close()
    return rows


def allocated_cores(flux) -> int:
    """Cores the scheduler's own pool holds as allocated (``sched.resource-status``)."""
    from flux.idset import IDset  # type: ignore[import-not-found]  # only where Flux runs

    answer = flux.handle().rpc("sched.resource-status").get()
    r_lite = (answer.get("allocated") or {}).get("execution", {}).get("R_lite", [])
    return sum(len(IDset(entry["rank"])) * len(IDset(entry["children"].get("core", ""))) for entry in r_lite)
