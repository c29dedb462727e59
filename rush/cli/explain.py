"""``rush explain JOB`` and ``rush status``: the journal's answers for one job and for the queue.

Read-only, always. By default the question goes to the running daemon's query socket, which
answers only what the RJMS lets the caller see (:mod:`rush.planner.query_server`) and has the
core loaded (about 0.3 s instead of about 1 s); without a daemon the journal is read directly
when the caller can read it (root, the rush user). ``--journal`` / ``--socket`` choose. Exit status: 0 answered, 1 the
job is not in the journal or belongs to someone the caller may not see, 2 a configuration
problem (a wrong path), 3 the journal or daemon cannot answer now (locked, corrupt, down).

``--json`` keys are stable (new keys may be added, none renamed or removed): see docs/users.md.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import typer

from rush.cli.app import app

DEFAULT_JOURNAL = Path("/var/lib/rush/journal.sqlite")
DEFAULT_SOCKET = Path("/run/rush/query.sock")
SLURM_START_NOTE = (
    "Slurm's own StartTime (squeue --start) and Flux's t_estimate are the RJMS's backfill "
    "projection over time limits; rush's estimate is its own plan or projection of the queue in "
    "rush's order, with predicted runtimes where a model is loaded."
)


def _source(journal: Path | None, socket_path: Path | None, config: Path | None) -> tuple[str, Path]:
    """("journal", path) or ("socket", path): what was asked for, else the journal if readable."""
    from rush.errors import ConfigError

    if journal is not None and socket_path is not None:
        raise ConfigError("give --journal or --socket, not both", where="--journal/--socket")
    if journal is not None:
        return "journal", journal
    if socket_path is not None:
        return "socket", socket_path
    default_journal, default_socket = DEFAULT_JOURNAL, DEFAULT_SOCKET
    if config is not None:
        from rush.planner.config import load_config

        daemon = load_config(config).daemon
        default_journal, default_socket = daemon.journal, daemon.query_socket
    # The running daemon answers fastest (its core is loaded); else the file, if readable.
    if _is_socket(default_socket) or not os.access(default_journal, os.R_OK):
        return "socket", default_socket
    return "journal", default_journal


def _is_socket(path: Path) -> bool:
    try:
        return path.is_socket()
    except OSError:  # e.g. a directory the caller may not cross
        return False


def _run(answer: Any) -> Any:
    """Call ``answer()``; RushErrors become the documented exit status and message."""
    from rush.errors import ConfigError, RushError
    from rush.planner.journal_query import JobNotFound, JobNotVisible

    try:
        return answer()
    except (JobNotFound, JobNotVisible) as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(1)
    except ConfigError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(2)
    except RushError as exc:
        typer.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(3)


JOURNAL_OPTION = typer.Option(
    None, "--journal", help="Read this journal file directly (you must be able to read it)."
)
SOCKET_OPTION = typer.Option(
    None, "--socket", help="Ask the daemon on this query socket (daemon.query_socket)."
)
CONFIG_OPTION = typer.Option(
    None, "--config", help="rush.toml: its daemon.journal and daemon.query_socket are the defaults."
)
JSON_OPTION = typer.Option(False, "--json", help="Print JSON (stable keys; see docs/users.md).")


@app.command("explain")
def explain_command(
    job: int = typer.Argument(..., min=0, help="The job id."),
    journal: Path | None = JOURNAL_OPTION,
    socket_path: Path | None = SOCKET_OPTION,
    config: Path | None = CONFIG_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Why a job is where it is: its priority and terms, estimated start, skips, every action."""

    def answer() -> dict[str, Any]:
        kind, path = _source(journal, socket_path, config)
        if kind == "socket":
            from rush.planner.query_server import ask

            return ask(path, {"op": "explain", "job": job})
        from rush.planner.journal_query import JournalQuery

        with JournalQuery(path) as query:
            return query.job_view(job).to_json()

    view = _run(answer)
    if as_json:
        typer.echo(json.dumps(view, indent=1, sort_keys=True, default=str))
    else:
        typer.echo("\n".join(explain_text(view, time.time())))


@app.command("status")
def status_command(
    user: str | None = typer.Option(None, "--user", help="Only this user's jobs."),
    journal: Path | None = JOURNAL_OPTION,
    socket_path: Path | None = SOCKET_OPTION,
    config: Path | None = CONFIG_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """The queue as rush sees it: one line per job (pending first, in rank order)."""

    def answer() -> list[dict[str, Any]]:
        kind, path = _source(journal, socket_path, config)
        if kind == "socket":
            from rush.planner.query_server import ask

            return ask(path, {"op": "status", "user": user})
        from rush.planner.journal_query import JournalQuery, status_json

        with JournalQuery(path) as query:
            return status_json(query.queue_view(user=user))

    lines = _run(answer)
    if as_json:
        typer.echo(json.dumps(lines, indent=1, sort_keys=True))
        return
    now = time.time()
    typer.echo(
        f"{'JOB':>10} {'USER':<12} {'STATE':<8} {'PRIORITY':>11} {'RANK':>6} {'EST. START':<22} "
        f"{'BASIS':<12} {'CLASS':<8} SKIPS"
    )
    for s in lines:
        typer.echo(
            f"{s['job_id']:>10} {str(s['user'] or '-')[:12]:<12} {s['state']:<8} {_v(s['priority']):>11} "
            f"{_v(s['rank']):>6} {_when(s['estimated_start'], now, short=True):<22} {_v(s['estimate_basis']):<12} "
            f"{_v(s['runtime_class']):<8} {s['skips']}"
        )


# -- text ---------------------------------------------------------------------------------------
def _v(value: Any) -> str:
    return "-" if value is None else str(value)


def _stamp(t: float | None) -> str:
    if t is None or not math.isfinite(t):
        return "-"
    return dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def _span(seconds: float) -> str:
    s = abs(seconds)
    text = f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min" if s < 7200 else f"{s / 3600:.1f} h"
    return text if s < 172800 else f"{s / 86400:.1f} days"


def _when(t: float | None, now: float, short: bool = False) -> str:
    if t is None:
        return "not in sight"
    rel = f"in {_span(t - now)}" if t > now else f"{_span(now - t)} ago"
    return _stamp(t)[5:16] + f" ({rel})" if short else f"{_stamp(t)} ({rel})"


def explain_text(view: dict[str, Any], now: float) -> list[str]:
    """The human answer to ``rush explain`` from its JSON."""
    row = view["row"]
    out = [f"job {view['job_id']}"]
    if row is None:
        out.append("  not in rush's queue view (left before the queue was journaled); decisions below")
    else:
        out += [
            f"  state        {row['state']} (as rush last saw it, {_stamp(row['time'])}, cycle {row['cycle']})",
            f"  owner        {row['user']} (account {_v(row['account'])}, partition {_v(row['partition'])})",
            f"  submitted    {_stamp(row['submit'])}; {row['procs']} processors, limit {_span(row['requested_time'])}",
        ]
        out += _priority_lines(view, row)
        out += _estimate_lines(view, row, now)
    out += _skip_lines(view)
    out += _history_lines(view)
    return out


def _priority_lines(view: dict[str, Any], row: dict[str, Any]) -> list[str]:
    rank = f"rank {view['rank']} of {view['pending']} pending" if view["rank"] else "no rank (not pending)"
    out = [f"  priority     {_v(row['priority'])}; {rank}"]
    terms = view["terms"]
    if terms is not None:
        out.append(f"  group        {terms['group']}: {terms['group_reason']}")
        out.append(f"  policy       {terms['policy_text']}: key {terms['key']:.6g} (smaller runs first)")
        inputs = ", ".join(f"{k}={v:.6g}" for k, v in terms["inputs"].items())
        out.append(f"    inputs     {inputs}")
        for t in terms["terms"]:
            weight = "" if t["weight"] is None else f" x weight {t['weight']:.6g} = {t['contribution']:.6g}"
            out.append(f"    term       {t['name']} = {t['value']:.6g}{weight}")
    elif view["terms_error"]:
        out.append(f"  terms        not available: {view['terms_error']}")
    outputs = row.get("model_outputs") or {}
    cls = outputs.get("runtime_class", row["runtime_class"] if row["runtime_class"] >= 0 else "unknown")
    probability = {k: v for k, v in outputs.items() if "prob" in k}
    source = outputs.get("class_source")
    out.append(
        f"  class        {cls}"
        + (f" ({source})" if source else "")
        + "".join(f"; {k} {v}" for k, v in probability.items())
    )
    if row["estimate"] is not None:
        runtime_source = outputs.get("runtime_source")
        said = {None: "the policy's p~", "request": "the request: no shorter prediction"}
        why = said.get(runtime_source, f"predicted by {runtime_source}")
        out.append(f"  estimate     runtime {_span(row['estimate'])} ({why})")
    out.append(
        f"  fair-share   {_v(row['fairshare'])}"
        + (" (not read: neutral 0.5)" if row["fairshare"] is None else "")
    )
    return out


def _estimate_lines(view: dict[str, Any], row: dict[str, Any], now: float) -> list[str]:
    out = []
    if row["state"] == "running":
        out.append(f"  started      {_stamp(row['start'])}")
    else:
        out.append(f"  est. start   {_when(row['estimated_start'], now)}; basis {_v(row['estimate_basis'])}")
        behind = view["waits_behind"]
        if behind is not None:
            who = f"job {behind['job_id']}" if behind["job_id"] is not None else "another user's job"
            out.append(
                f"  waits behind {who} ({_v(behind['state'])}), predicted end {_when(behind['predicted_end'], now)}"
            )
    record = view["record"] or {}
    if row["state"] == "pending" and record.get("reserved_at") is not None:
        where = record.get("reserved_nodes")
        out.append(
            f"  reserved     {_when(record['reserved_at'], now)}"
            + (f" on {where}" if where else " (nodes not kept: processor counts, or not yet re-placed)")
        )
    if row["first_estimated_at"] is not None:
        out.append(
            f"  first est.   {_stamp(row['first_estimated_start'])} (made {_stamp(row['first_estimated_at'])})"
        )
    out.append(f"  note         {SLURM_START_NOTE}")
    return out


def _skip_lines(view: dict[str, Any]) -> list[str]:
    out = [f"  skips        {view['skips']}"]
    record = view["record"] or {}
    if record.get("held_by_rush"):
        out[-1] += " (held by rush now)"
    for h in view["skip_predictions"]:
        out.append(f"    {_line(h)}; prediction {json.dumps(h['model_outputs'] or {}, sort_keys=True)}")
    out.append(f"  kills        {len(view['kills'])}; requeues {record.get('requeues', 0)}")
    out += [f"    {_line(h)}" for h in view["kills"]]
    return out


def _history_lines(view: dict[str, Any]) -> list[str]:
    out = [
        f"  actions      {view['history_rows']} journal rows in {len(view['history']) + view['history_omitted']} lines"
    ]
    for k, h in enumerate(view["history"]):
        if view["history_omitted"] and k == 20:
            out.append(f"    ... {view['history_omitted']} lines left out ...")
        out.append(f"    {_line(h)}")
        if h["answer"]:
            out.append(f"      answer: {h['answer']}")
    return out


def _line(h: dict[str, Any]) -> str:
    when = _stamp(h["first_time"])
    if h["count"] > 1:
        when += f" .. {_stamp(h['last_time'])} x{h['count']}"
    value = "" if h["value"] is None else f" value={h['value']:.6g}"
    return f"{when} {h['action']} [{h['status']}, {h['mode']}]{value}: {h['reason']}"
