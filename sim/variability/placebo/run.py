"""The learned predictor's own contribution, by placebo (round eight, dev/log.md r).

    python sim/variability/placebo/run.py [--trials 4000-4009,5000-5004] [--scenarios ADAA,WS,SS]
        [--placebos RUSH-PLACEBO,PRESENT-LABEL-PLACEBO] [--tables-only]

A placebo runs a learned policy's rules (RUSH's: FCFS+EASY, first-fit, skip-with-limit 10, skips
counted on events) with its model replaced by ``dev/diagnostic_predictors.py``'s ``Placebo``: each
start question flagged by a seeded coin at the model's own rate, per scenario and **per
question** (flagged questions / questions, pooled over the trials run), read from the model's
prediction rows on the same trials:

* RUSH-PLACEBO: RUSH's committed predictions (``results/``, ``trials-4005/``, ``trials-5000/``);
* PRESENT-LABEL-PLACEBO: RUSH-PRESENT-LABEL's committed runs kept no prediction rows, so its trials
  are rerun here with the committed present-label model (``present-label/paper``, as
  ``dev/rerun_policy.py`` runs it) only to read its questions (``present-label-questions.csv.gz``);
  each rerun's jobs must start, end and vary as in the committed rows, or the run stops.

RUSH-JOB-PLACEBO and PRESENT-LABEL-JOB-PLACEBO (dev/log.md r′) match the model per job instead:
``JobPlacebo`` flags a job's first question at the model's share of jobs flagged at their first
question and each later question (the job was held) at the model's share of later questions
flagged, so the number of held jobs and their hold lengths are the model's, the jobs random.

Each trial is run_trial's cell as the study builds it (``dev/trial_cell.py``: the committed
campaign's bar, the study file's machine and noise, seed 0; the cause attribution left out).
Cells already in the outputs are kept, so the command resumes. Writes ``runs.csv.gz`` and
``predictions.csv.gz`` (the placebos' rows, columns of the study's), ``rates.json`` and
``tables.md`` (``placebo_tables.py``).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
STUDY = HERE.parent
sys.path[:0] = [str(HERE), str(STUDY / "dev")]

from diagnostic_predictors import JobPlacebo, Placebo  # noqa: E402
from trial_cell import cell, without_attribution  # noqa: E402

LEARNED = {
    "RUSH-PLACEBO": "RUSH",
    "PRESENT-LABEL-PLACEBO": "RUSH-PRESENT-LABEL",
    "RUSH-JOB-PLACEBO": "RUSH",
    "PRESENT-LABEL-JOB-PLACEBO": "RUSH-PRESENT-LABEL",
}
JOB_MATCHED = ("RUSH-JOB-PLACEBO", "PRESENT-LABEL-JOB-PLACEBO")  # dev/log.md r′: two coins, per job
RULES = "RUSH"  # both placebos run RUSH's rules (RUSH-PRESENT-LABEL's are the same)
PREDICTIONS = {
    "RUSH": [STUDY / d / "predictions.csv.gz" for d in ("results", "trials-4005", "trials-5000")],
    "RUSH-PRESENT-LABEL": [HERE / "present-label-questions.csv.gz"],
}
PRESENT_LABEL_RUNS = [
    STUDY / "present-label-4000" / "runs-rush-present-label.csv.gz",
    STUDY / "trials-5000" / "runs-rush-present-label.csv.gz",
]
PRESENT_LABEL_MODELS = STUDY / "present-label" / "paper"
PREDICTION_COLUMNS = ["variant", "scenario", "policy", "trial", "t", "job_id", "app", "flag", "oracle_flag"]


def trial_list(text: str) -> list[int]:
    """``4000-4009,5000-5004`` as trial numbers."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def trial_ranges(text: str) -> str:
    """An argparse type: trials as :func:`trial_list` reads them (``4000-4009,5000-5004``: each
    a number or a rising range of numbers from 0), given back as written (rates.json keeps it)."""
    from rush.studies.arg_types import MOST, count

    bound, total = count(0), 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        first = bound(lo)
        last = bound(hi) if hi else first
        if last < first:
            raise argparse.ArgumentTypeError(f"{part!r}: the range falls ({last} < {first})")
        total += last - first + 1
    if total > MOST:
        raise argparse.ArgumentTypeError(f"{total} trials, more than {MOST}")
    return text


def read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with gzip.open(path, "rt") as fh:
        return list(csv.DictReader(fh))


def write(path: Path, rows: list[dict], columns: list[str] | None = None) -> None:
    """All of ``rows`` at once, through a temporary file: never a half-written output."""
    columns = columns or list(dict.fromkeys(k for r in rows for k in r))
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt", newline="") as fh:
        w = csv.DictWriter(fh, columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


@contextmanager
def dev_models(home: Path | None) -> Iterator[None]:
    """RUSH_DEV_MODELS set to ``home`` (None: unset) while a cell is built."""
    keep = os.environ.pop("RUSH_DEV_MODELS", None)
    if home is not None:
        os.environ["RUSH_DEV_MODELS"] = str(home)
    try:
        yield
    finally:
        os.environ.pop("RUSH_DEV_MODELS", None)
        if keep is not None:
            os.environ["RUSH_DEV_MODELS"] = keep


def trial_rows(c: dict, predictor: Placebo | None = None) -> tuple[list[dict], list[dict]]:
    """One cell's job rows and prediction rows, each headed by the cell's keys."""
    import rush.contention.experiment as ex

    with without_attribution():
        rows = ex.run_trial(c, predictor=predictor)
    head = {k: c[k] for k in ("variant", "scenario", "policy", "trial")}
    jobs = [head | {k: v for k, v in r.items() if k != "kind"} for r in rows if r["kind"] == "job"]
    asked = [head | {k: v for k, v in r.items() if k != "kind"} for r in rows if r["kind"] == "prediction"]
    return jobs, asked


def present_label_questions(scenarios: list[str], trials: list[int]) -> None:
    """RUSH-PRESENT-LABEL rerun on the trials for its questions, checked against its committed jobs."""
    committed: dict[tuple[str, int], dict[str, dict]] = {}
    for path in PRESENT_LABEL_RUNS:
        for r in read(path):
            if r["variant"] == "paper":
                committed.setdefault((r["scenario"], int(r["trial"])), {})[r["job_id"]] = r
    dest = HERE / "present-label-questions.csv.gz"
    kept = read(dest)
    done = {(r["scenario"], int(r["trial"])) for r in kept}
    for s in scenarios:
        for t in trials:
            if (s, t) in done:
                continue
            if (s, t) not in committed:
                raise SystemExit(
                    f"RUSH-PRESENT-LABEL paper {s} {t}: no committed run to check the rerun against"
                )
            with dev_models(PRESENT_LABEL_MODELS):
                c = cell("paper", s, t, "RUSH-PRESENT-LABEL")
            jobs, asked = trial_rows(c)
            mine = committed[(s, t)]
            differ = [
                r["job_id"]
                for r in jobs
                if str(r["job_id"]) not in mine
                or abs(float(mine[str(r["job_id"])]["start"]) - r["start"]) > 1e-6
                or abs(float(mine[str(r["job_id"])]["end"]) - r["end"]) > 1e-6
                or mine[str(r["job_id"])]["variation"] != str(r["variation"])
            ]
            if differ or len(jobs) != len(mine):
                raise SystemExit(
                    f"RUSH-PRESENT-LABEL paper {s} {t} differs from the committed run: {differ[:5]}"
                )
            kept += asked
            write(dest, kept, PREDICTION_COLUMNS)
            print(
                f"RUSH-PRESENT-LABEL {s} {t}: {len(jobs)} jobs as committed, {len(asked)} questions",
                flush=True,
            )


def rates(learned: str, scenarios: list[str], trials: list[int]) -> dict[str, dict]:
    """Per scenario, over ``trials``: the model's questions, flagged questions and their share (r's
    rate), the share of its questioned jobs flagged at least once, and r′'s two rates: the share of
    jobs flagged at their first question and of later questions flagged."""
    answers: dict[str, dict[tuple[int, str], list[bool]]] = {s: {} for s in scenarios}
    for path in PREDICTIONS[learned]:
        for r in read(path):
            if r["variant"] != "paper" or r["policy"] != learned or r["scenario"] not in answers:
                continue
            if int(r["trial"]) not in trials:
                continue
            answers[r["scenario"]].setdefault((int(r["trial"]), r["job_id"]), []).append(r["flag"] == "True")
    out = {}
    for s, jobs in answers.items():
        if not jobs:
            raise SystemExit(f"{learned} paper {s}: no prediction rows on trials {trials[0]}–{trials[-1]}")
        n = sum(len(a) for a in jobs.values())
        f = sum(sum(a) for a in jobs.values())
        later = [x for a in jobs.values() for x in a[1:]]
        out[s] = {
            "questions": n,
            "flagged": f,
            "rate_per_question": f / n,
            "jobs_flagged_share": sum(any(a) for a in jobs.values()) / len(jobs),
            "rate_first_question": sum(a[0] for a in jobs.values()) / len(jobs),
            "rate_later_questions": sum(later) / len(later) if later else 0.0,
        }
    return out


def predictor(name: str, rate: dict, scenario: str, trial: int) -> tuple[Placebo | JobPlacebo, dict]:
    """The placebo of one trial and the rates it records in its rows."""
    if name in JOB_MATCHED:
        first, again = rate["rate_first_question"], rate["rate_later_questions"]
        return JobPlacebo.for_trial(first, again, scenario, trial), {
            "placebo_first": first,
            "placebo_again": again,
        }
    return Placebo.for_trial(rate["rate_per_question"], scenario, trial), {
        "placebo_rate": rate["rate_per_question"]
    }


def run_placebos(placebos: list[str], scenarios: list[str], trials: list[int], table: dict) -> None:
    runs, asked = read(HERE / "runs.csv.gz"), read(HERE / "predictions.csv.gz")
    done = {(r["policy"], r["scenario"], int(r["trial"])) for r in runs}
    for name in placebos:
        for s in scenarios:
            for t in trials:
                if (name, s, t) in done:
                    continue
                placebo, recorded = predictor(name, table[name][s], s, t)
                jobs, questions = trial_rows(cell("paper", s, t, RULES), placebo)
                runs += [r | {"policy": name} | recorded for r in jobs]
                asked += [r | {"policy": name} for r in questions]
                write(HERE / "runs.csv.gz", runs)
                write(HERE / "predictions.csv.gz", asked, PREDICTION_COLUMNS)
                flagged = sum(r["flag"] for r in questions)
                print(
                    f"{name} {s} {t}: {recorded}, {flagged}/{len(questions)} questions flagged",
                    flush=True,
                )


def main() -> None:
    from rush.contention.experiment import SCENARIO_NAMES
    from rush.studies.arg_types import names

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=trial_ranges, default="4000-4009,5000-5004")
    ap.add_argument("--scenarios", type=names(SCENARIO_NAMES), default="ADAA,WS,SS")
    ap.add_argument(
        "--placebos",
        type=names(tuple(LEARNED)),
        default=",".join(LEARNED),
        help="placebos to run (default: all)",
    )
    ap.add_argument("--tables-only", action="store_true", help="only write tables.md from the outputs")
    args = ap.parse_args()
    trials, scenarios = trial_list(args.trials), list(args.scenarios)
    placebos = list(args.placebos)
    if not args.tables_only:
        if any(LEARNED[p] == "RUSH-PRESENT-LABEL" for p in placebos):
            present_label_questions(scenarios, trials)
        table = {name: rates(LEARNED[name], scenarios, trials) for name in placebos}
        rates_path = HERE / "rates.json"
        old = json.loads(rates_path.read_text()) if rates_path.exists() else {}
        for name in placebos:
            old[name] = {"learned": LEARNED[name], "trials": args.trials, "scenarios": table[name]}
        rates_path.write_text(json.dumps(old, indent=2, sort_keys=True) + "\n")
        run_placebos(placebos, scenarios, trials, table)
    from placebo_tables import main as tables

    tables(HERE / "tables.md")


if __name__ == "__main__":
    main()
