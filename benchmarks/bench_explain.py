"""``rush explain`` / ``rush status`` on a journal of 90 days (issue 22: explain <= 0.5 s; issue 31:
``rush explain --journal`` <= 0.3 s, and without numba).

Generates a journal with the daemon's own schema (rush.planner.journal.Journal), one cycle a
minute for 90 days (129 600 cycles), a queue table of 10 000 pending jobs (plus running and
gone ones), and decisions of realistic volume: priority changes, holds and skips, kills,
and a conservative ``reserve`` advice row per cycle for each job the core reserves (a sample:
the jobs' waits are drawn so the table holds ``--decisions`` rows, default 3 000 000). The job
explained waited a week with an advice row every cycle (10 080 rows) and skips.

Then times, in the same run: ``python -c pass`` (the interpreter, the reference), the
function (:meth:`JournalQuery.job_view`, a fresh read-only connection each time), and the
command lines ``rush explain JOB --journal`` and ``rush status --journal`` in fresh
processes, each ``--repeat`` times interleaved; medians printed. It also prints the query
plans of the queries explain makes, to show which index each uses.

Run: ``python benchmarks/bench_explain.py [--decisions N] [--repeat N] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_args

from rush.core.config import CoreConfig
from rush.core.policies import parse_policy
from rush.core.priority_terms import JobInputs
from rush.planner.journal import QUEUE_COLUMNS, Journal
from rush.planner.journal_query import EVERYONE, JournalQuery
from rush.planner.query_server import QueryServer
from rush.planner.queue_view import describe_core, terms_json

DAYS = 90
CYCLE = 60.0
T_END = 1_790_000_000.0
T0 = T_END - DAYS * 86400
PENDING = 10_000
RUNNING = 2_000
GONE = 30_000
EXPLAINED = 1  # the job that waited a week
TARGET = 0.3  # issue 31 (issue 22's was 0.5)
POLICY = "LINEAR:q=1,wait=-0.01,fairshare=-1000"


# The command line's entry point in this process, then whether numba was imported (at exit:
# rush explain ends with os._exit after the atexit handlers, rush.cli.main.leave_at_once).
NUMBA_CHECK = """
import atexit, sys
rush, job, path = sys.argv[1:]
sys.argv = [rush, "explain", job, "--journal", path]
atexit.register(lambda: print("numba" in sys.modules, file=sys.stderr))
from rush.cli.main import main
main()
"""


def generate(path: Path, n_decisions: int, seed: int = 1) -> dict[str, int]:
    rng = random.Random(seed)
    journal = Journal(path, synchronous="NORMAL")
    config = CoreConfig.from_names(parse_policy(POLICY), "conservative")
    journal.set_meta("core_config", describe_core(config, POLICY))
    journal.set_meta("time_origin", repr(T0))
    db = journal.db
    cycles = int(DAYS * 86400 / CYCLE)
    with journal.transaction():
        db.executemany(
            "INSERT INTO cycles (cycle, time, ok, mode, pending, running, counts, seconds, error)"
            " VALUES (?, ?, 1, 'apply', ?, ?, '{}', 0.05, '')",
            ((c + 1, T0 + c * CYCLE, PENDING, RUNNING) for c in range(cycles)),
        )
    users = [f"user{k}" for k in range(300)]
    rows = []
    for job_id in range(1, PENDING + RUNNING + GONE + 1):
        state = "pending" if job_id <= PENDING else "running" if job_id <= PENDING + RUNNING else "gone"
        submit = T_END - rng.uniform(60, (7 * 86400 if job_id == EXPLAINED else DAYS * 86400))
        estimate = rng.choice([None, rng.uniform(60, 86400)])
        rows.append(
            (
                job_id,
                T_END,
                cycles,
                state,
                rng.choice(users),
                "acct",
                "batch",
                submit,
                rng.choice([1, 4, 32, 128]),
                3600.0 * rng.randint(1, 48),
                estimate,
                rng.choice([-1, 0, 1]),
                rng.random(),
                rng.randint(1, 3 * 2**29) if state == "pending" else None,
                1,
                rng.random() * 1e6,
                T_END + rng.uniform(0, 86400 * 3) if state == "pending" else None,
                "reservation" if state == "pending" else None,
                rng.randint(PENDING + 1, PENDING + RUNNING) if state == "pending" else None,
                submit + 60 if state == "pending" else None,
                submit + 60 if state == "pending" else None,
                submit + 600 if state != "pending" else None,
                json.dumps({"runtime_class": "large", "class_source": "model", "variable": False}),
                # As the daemon writes it (rush/planner/queue_view.py): explain reads it back.
                terms_json(config, POLICY, JobInputs(submit, 4, estimate or 3600.0), T_END, T0)
                if state == "pending"
                else None,
            )
        )
    marks = ", ".join("?" * len(QUEUE_COLUMNS))
    with journal.transaction():
        db.executemany(f"INSERT INTO queue ({', '.join(QUEUE_COLUMNS)}) VALUES ({marks})", rows)
        db.executemany(
            "INSERT INTO jobs (job_id, skips, held_by_rush, requeues) VALUES (?, ?, ?, ?)",
            ((r[0], rng.choice([0, 0, 0, 3]), 0, 0) for r in rows if r[3] != "gone"),
        )

    def decisions():
        # The explained job: an advice row every cycle for a week, a hold and 200 skips.
        start = cycles - 7 * 1440
        yield (
            T0 + start * CYCLE,
            start,
            EXPLAINED,
            "hold",
            "predicted variable: skip 1 of 10",
            None,
            "done",
            "ok",
        )
        for c in range(start, cycles):
            t = T0 + c * CYCLE
            yield (
                t,
                c,
                EXPLAINED,
                "reserve",
                f"reserved at t={t + 3600:.0f} on n[1-4]",
                t + 3600,
                "advice",
                "",
            )
            if c < start + 200:
                yield (t, c, EXPLAINED, "skip", "still predicted variable", None, "done", "")
        # Everyone else: runs of reserve advice, priority changes, a few kills.
        left = n_decisions - 7 * 1440 - 201
        while left > 0:
            job = rng.randint(2, PENDING + RUNNING + GONE)
            c0 = rng.randint(0, cycles - 1)
            span = min(rng.randint(1, 600), left, cycles - c0)
            for c in range(c0, c0 + span):
                t = T0 + c * CYCLE
                yield (t, c, job, "reserve", f"reserved at t={t + 600:.0f}", t + 600, "advice", "")
            yield (
                T0 + c0 * CYCLE,
                c0,
                job,
                "priority",
                "rank 3 of 10000",
                rng.randint(1, 2**30),
                "done",
                "ok",
            )
            left -= span + 1

    batch = []
    for d in decisions():
        batch.append(d)
        if len(batch) == 100_000:
            _insert(journal, batch)
            batch = []
    _insert(journal, batch)
    journal.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    counts = journal.counts()
    journal.close()
    return counts


def _insert(journal: Journal, batch: list[tuple]) -> None:
    with journal.transaction():
        journal.db.executemany(
            "INSERT INTO decisions (time, cycle, job_id, action, reason, value, model_outputs, mode, status, answer)"
            " VALUES (?, ?, ?, ?, ?, ?, '{}', 'apply', ?, ?)",
            batch,
        )


def plans(path: Path) -> list[str]:
    """The query plans of explain's queries (each should SEARCH by an index, not SCAN)."""
    db = JournalQuery(path).db
    queries = [
        ("SELECT * FROM queue WHERE job_id = ?", (1,)),
        ("SELECT * FROM decisions WHERE job_id = ? ORDER BY id", (1,)),
        ("SELECT count(*) FROM queue WHERE state = 'pending' AND priority > ?", (5,)),
        ("SELECT count(*) FROM queue WHERE state = 'pending'", ()),
    ]
    out = []
    for query, args in queries:
        plan = " / ".join(r[-1] for r in db.execute("EXPLAIN QUERY PLAN " + query, args))
        out.append(f"  {query}\n    -> {plan}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--decisions", type=bench_args.positive, default=3_000_000)
    parser.add_argument("--repeat", type=bench_args.positive, default=5)
    parser.add_argument("--keep", type=Path, default=None, help="write the journal here and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = (args.keep or Path(tmp)) / "journal.sqlite"
        if not path.exists():
            t = time.perf_counter()
            counts = generate(path, args.decisions)
            print(
                f"generated {path} in {time.perf_counter() - t:.1f} s: {counts}, {path.stat().st_size / 2**20:.0f} MiB"
            )
        print("query plans:")
        print("\n".join(plans(path)))
        rush = str(Path(sys.executable).with_name("rush"))
        # The daemon's query socket, warm as in a running daemon (its core loaded).
        sock = Path(tmp) / "query.sock"
        server = QueryServer(sock, path, lambda: EVERYONE).start()
        with JournalQuery(path) as q:
            q.job_view(EXPLAINED)
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            f"rush explain {EXPLAINED} --journal": [rush, "explain", str(EXPLAINED), "--journal", str(path)],
            f"rush explain {EXPLAINED} --journal --json": [
                rush,
                "explain",
                str(EXPLAINED),
                "--journal",
                str(path),
                "--json",
            ],
            "rush status --journal": [rush, "status", "--journal", str(path)],
            f"rush explain {EXPLAINED} --socket (daemon)": [
                rush,
                "explain",
                str(EXPLAINED),
                "--socket",
                str(sock),
            ],
            "rush status --socket (daemon)": [rush, "status", "--socket", str(sock)],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        cpu: dict[str, list[float]] = {name: [] for name in commands}  # user + system of the child
        function: list[float] = []
        for _ in range(args.repeat):
            for name, argv in commands.items():
                t = time.perf_counter()
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(argv, check=True, capture_output=True)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                times[name].append(time.perf_counter() - t)
                cpu[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            t = time.perf_counter()
            with JournalQuery(path) as q:
                view = q.job_view(EXPLAINED)
            function.append(time.perf_counter() - t)
        print(f"explained job: {view.history_rows} decision rows in {len(view.history)} lines")
        print(f"{'median of ' + str(args.repeat):<40} {'wall s':>7} {'CPU s':>7}  (load {_load()})")
        print(f"{'JournalQuery.job_view (function)':<40} {statistics.median(function):7.3f}")
        for name, values in times.items():
            print(f"{name:<40} {statistics.median(values):7.3f} {statistics.median(cpu[name]):7.3f}")
        server.close()
        loaded = subprocess.run(
            [sys.executable, "-c", NUMBA_CHECK, rush, str(EXPLAINED), str(path)],
            capture_output=True,
            text=True,
        )
        # The check's verdict is stderr's last line (stdout holds explain's own output).
        verdict = loaded.stderr.strip().splitlines()[-1:] or ["?"]
        print(f"rush explain --journal imports numba: {verdict[0]}")
        for how in ("--journal", "--socket (daemon)"):
            explain = statistics.median(times[f"rush explain {EXPLAINED} {how}"])
            verdict = "met" if explain <= TARGET else "NOT met"
            print(f"target: rush explain {how} <= {TARGET} s: {verdict} ({explain:.3f} s)")


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


if __name__ == "__main__":
    main()

# Measured (2026-11-28, evening, load 18 on this 2-core host; `--repeat 7`, 3 000 000 decisions;
# before = 252316b, after = leaving at once, back to back), median wall / CPU seconds:
#                                          before          after
#   python -c pass                         0.104 / 0.022   0.095 / 0.020
#   rush explain 1 --journal               0.862 / 0.212   0.776 / 0.162
#   rush status --journal                  1.594 / 0.347   1.377 / 0.295
#   rush explain 1 --socket (daemon)       0.786 / 0.174   0.771 / 0.134
# CPU is within the 0.3 s target; wall time at this load is mostly waiting for a core (the
# interpreter alone takes 0.1 s of wall for 0.02 s of CPU). numba is not imported.
# Measured (2026-11-29, 01:20 UTC, load 15.6; `--repeat 5`, 3 000 000 decisions; before = 47d68d4,
# after = typer's options converted without pydantic), median wall / CPU seconds:
#                                          before          after
#   python -c pass                         0.125 / 0.027   0.127 / 0.027
#   rush explain 1 --journal               0.874 / 0.189   0.478 / 0.106
#   rush status --journal                  1.556 / 0.329   0.756 / 0.234
#   rush explain 1 --socket (daemon)       0.849 / 0.155   0.470 / 0.076
# CPU is a third of the 0.3 s target; the wall time at load 15 is waiting for a core (the
# interpreter alone: 0.13 s wall for 0.03 s CPU). What is left: the interpreter, typer's import
# (~0.05) and the query.
