"""Table 6.6's columns on the full job set over seeds, each read against SPF-CI (round 28; no simulation).

Reads the committed runs of ``results/full/``: ``log_noise_runs.csv`` (EASY++ on the log's history,
the weekly Gaussier fit: ``online_noise.py --job-set full --columns log``), ``online_noise_runs.csv``
(EASY++ and Gaussier online: ``online_noise.py --job-set full``), ``paired_seeds_h18.csv`` (SPF-CI and
H18 with their ties broken by each seed's permutation: ``paired_seeds.py --job-set full``) and
``table_6_6.csv`` (FCFS-CI's single run and EASY-FCFS's: no seed moves an FCFS-ordered run without
predictions, see the README). Seeds 1..N are read for every column (seed 0 / "arrival" is the
committed single run). Writes ``results/full/columns_noise.md`` / ``.csv``: per trace and column,
its mechanism, single run, mean, sd, min and max over the seeds; the per-seed difference from
SPF-CI with the same seed number (for H18 a true pair, the same permutation; for the jittered
columns two independent perturbations that share a seed number only), its mean, sd and 95 %
t-interval; and two verdicts fixed before the runs (README, round 28): **2 sd** (above or below
when |mean difference| > 2 sd of the differences, else level) and **t** (above or below when
the t-interval excludes 0, else level).

    python sim/runtime_predictions/columns_noise.py
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
from pathlib import Path

from rush.studies.tables import write_table

OUT = Path(__file__).parent / "results" / "full"
TRACES = ("KTH-SP2", "CTC-SP2", "SDSC-BLUE", "SDSC-SP2")
SPF_CI, H18 = "SPF-CI (classifier)", "SPF-CI one step where confident"
# (column, file, scheduler in it, seed column, mechanism)
COLUMNS = (
    ("EASY++ (log history)", "log_noise_runs.csv", "easy++", "seed", "jitter"),
    ("Gaussier et al. (weekly)", "log_noise_runs.csv", "gaussier", "seed", "jitter"),
    ("EASY++ online", "online_noise_runs.csv", "easy++-online", "seed", "jitter"),
    ("Gaussier online", "online_noise_runs.csv", "gaussier-online", "seed", "jitter"),
    ("H18", "paired_seeds_h18.csv", H18, "tie_seed", "tie-breaks (paired)"),
)
SINGLE = {"0", "arrival"}


def seeded(out: Path, name: str, scheduler: str, key: str) -> dict[str, dict[str, float]]:
    """Per trace: {seed: improvement over EASY-FCFS, %} of ``scheduler`` in ``out/name``."""
    found: dict[str, dict[str, float]] = {}
    with open(out / name) as fh:
        for r in csv.DictReader(fh):
            if r["scheduler"] == scheduler:
                found.setdefault(r["trace"], {})[r[key]] = float(r["improvement_over_easy_fcfs_pct"])
    return found


def verdicts(diff: list[float]) -> tuple[str, str, str]:
    """(95 % t-interval, the 2-sd verdict, the t verdict) of per-seed differences from SPF-CI."""
    from scipy.stats import t

    mean, sd = statistics.mean(diff), statistics.stdev(diff)
    half = float(t.ppf(0.975, len(diff) - 1)) * sd / math.sqrt(len(diff))

    def side(beyond: bool) -> str:
        return ("above" if mean > 0 else "below") if beyond else "level"

    return f"[{mean - half:+.2f}, {mean + half:+.2f}]", side(abs(mean) > 2 * sd), side(abs(mean) > half)


def cell(trace: str, column: str, mechanism: str, runs: dict[str, float], spf: dict[str, float]) -> dict:
    """One column of one trace: its spread over the seeds and its difference from SPF-CI's."""
    seeds = sorted((s for s in spf if s not in SINGLE), key=int)
    single = next((v for s, v in runs.items() if s in SINGLE), math.nan)
    figures = [runs.get(s, single) for s in seeds]
    diff = [f - spf[s] for f, s in zip(figures, seeds, strict=True)]
    interval, two_sd, by_t = verdicts(diff)
    sd = statistics.stdev(figures)
    return {
        "trace": trace,
        "scheduler": column,
        "mechanism": mechanism,
        "seeds": len(seeds),
        "single run": f"{single:.2f}",
        "mean": f"{statistics.mean(figures):.2f}",
        "sd": f"{sd:.2f}",
        "min": f"{min(figures):.2f}",
        "max": f"{max(figures):.2f}",
        "minus SPF-CI: mean": f"{statistics.mean(diff):+.2f}",
        "sd of the differences": f"{statistics.stdev(diff):.2f}",
        "95 % t-interval": interval,
        "2-sd verdict": two_sd,
        "t verdict": by_t,
    }


def table(out: Path = OUT) -> list[dict]:
    """Every column of every trace whose SPF-CI seeds are committed (module docstring)."""
    spf_of = seeded(out, "paired_seeds_h18.csv", SPF_CI, "tie_seed")
    columns = {c: seeded(out, f, s, k) for c, f, s, k, _ in COLUMNS}
    with open(out / "table_6_6.csv") as fh:
        fcfs = {r["trace"]: float(r["fcfs_ci_pct"]) for r in csv.DictReader(fh)}
    rows = []
    for trace in TRACES:
        spf = spf_of.get(trace)
        if spf is None:
            print(f"{trace}: no SPF-CI seeds in {out.name}/paired_seeds_h18.csv: skipped", flush=True)
            continue
        rows.append(cell(trace, "SPF-CI", "tie-breaks", spf, {s: 0.0 for s in spf}))
        rows[-1] |= {k: "-" for k in list(rows[-1])[9:]}
        for column, _, _, _, mechanism in COLUMNS:
            if trace not in columns[column]:
                print(f"{trace} {column}: no seeded runs committed: skipped", flush=True)
                continue
            rows.append(cell(trace, column, mechanism, columns[column][trace], spf))
        rows.append(cell(trace, "FCFS-CI", "none (single run)", {"0": fcfs[trace]}, spf))
    return rows


def main() -> None:
    rows = table()
    write_table(OUT, "columns_noise", rows)
    print((OUT / "columns_noise.md").read_text())


if __name__ == "__main__":
    # No options: a flag given is refused (exit 2), not ignored while the files are rewritten.
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    main()
