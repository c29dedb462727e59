"""Tables and plots of the mixed-policy study (``--out DIR``): results/*.csv|json, plots/*.png.

Everything is computed before anything is written, and each file is replaced whole
(:func:`rush.simulator.result.atomic_write`), so a failed run leaves no half table.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

from rush.simulator.result import atomic_write

WEEKLY_COLUMNS = (
    "trace",
    "week",
    "jobs",
    "split",
    "method",
    "features",
    "w_star",
    "bsld_star",
    "bsld_train",
    "bsld_greedy",
    "best_pure",
    "best_pure_bsld",
    "saf_bsld",
    "fcfs_bsld",
)


def _clean(obj):
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return obj


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name)[:80] or "trace"


def _number(value: float | None) -> str:
    return "" if value is None or not math.isfinite(value) else f"{value:.6g}"


def _write_csv(path: Path, columns: tuple[str, ...] | list[str], rows: list[dict]) -> None:
    with atomic_write(path, newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns))
        writer.writeheader()
        writer.writerows(rows)


def weekly_rows(result: dict) -> list[dict]:
    rows = []
    for spec, data in result["traces"].items():
        for week in data["weeks"]:
            for method, m in week["methods"].items():
                rows.append(
                    {
                        "trace": spec,
                        "week": week["week"],
                        "jobs": week["jobs"],
                        "split": week["split"],
                        "method": method,
                        "features": ",".join(data["trained"][method]["features"]),
                        "w_star": " ".join(f"{x:.4f}" for x in m["w_star"]),
                        "bsld_star": _number(m["bsld_star"]),
                        "bsld_train": _number(m["bsld_train"]),
                        "bsld_greedy": _number(m["bsld_greedy"]),
                        "best_pure": week["best_pure"],
                        "best_pure_bsld": _number(week["best_pure_bsld"]),
                        "saf_bsld": _number(week["saf_bsld"]),
                        "fcfs_bsld": _number(week["fcfs_bsld"]),
                    }
                )
    return rows


def pure_rows(result: dict) -> list[dict]:
    return [
        {
            "trace": spec,
            "week": week["week"],
            "jobs": week["jobs"],
            "policy": name,
            "mean_bsld": _number(value),
        }
        for spec, data in result["traces"].items()
        for week in data["weeks"]
        for name, value in week["pure"].items()
    ]


def summary_rows(result: dict) -> list[dict]:
    rows = []
    for spec, data in result["traces"].items():
        for method, s in data["summary"].items():
            row = {"trace": spec, "method": method}
            for key, value in s.items():
                if isinstance(value, list):
                    value = " ".join(f"{x:.4f}" if isinstance(x, float) else str(x) for x in value)
                elif isinstance(value, float):
                    value = _number(value)
                row[key] = value
            rows.append(row)
    return rows


def write_study(result: dict, out: Path) -> list[Path]:
    """results/{summary.json, weekly.csv, pure_weekly.csv, summary.csv} and a plot per trace."""
    from rush.studies.plots.mixed import close, plot_trace

    results, plots = out / "results", out / "plots"
    figures = {spec: plot_trace(spec, data) for spec, data in result["traces"].items()}
    results.mkdir(parents=True, exist_ok=True)
    plots.mkdir(parents=True, exist_ok=True)
    written = [
        results / "summary.json",
        results / "weekly.csv",
        results / "pure_weekly.csv",
        results / "summary.csv",
    ]
    with atomic_write(written[0]) as fh:
        json.dump(_clean(result), fh, indent=1, sort_keys=True)
        fh.write("\n")
    _write_csv(written[1], WEEKLY_COLUMNS, weekly_rows(result))
    _write_csv(written[2], ("trace", "week", "jobs", "policy", "mean_bsld"), pure_rows(result))
    summary = summary_rows(result)
    _write_csv(written[3], list(summary[0]) if summary else ["trace", "method"], summary)
    for spec, figure in figures.items():
        path = plots / f"{_slug(spec)}_weekly_bsld.png"
        with atomic_write(path, "wb") as fh:
            figure.savefig(fh, format="png", dpi=110)
        written.append(path)
        close(figure)
    return written


def write_ranking(result: dict, out: Path) -> list[Path]:
    results = out / "results"
    results.mkdir(parents=True, exist_ok=True)
    json_path, csv_path = results / "ranking.json", results / "ranking.csv"
    with atomic_write(json_path) as fh:
        json.dump(_clean(result), fh, indent=1, sort_keys=True)
        fh.write("\n")
    rows = [
        {
            "trace": spec,
            "rank": r["rank"],
            "policy": r["policy"],
            "mean_bsld": _number(r["mean_bsld"]),
            "jobs": r["jobs"],
        }
        for spec, ranking in result["ranking"].items()
        for r in ranking
    ]
    _write_csv(csv_path, ("trace", "rank", "policy", "mean_bsld", "jobs"), rows)
    return [json_path, csv_path]
