"""Classification quality of the small/large runtime classifier.

With the small class as positive:

* TS (true small)  = predicted small and actually small;
* FS (false small) = predicted small but actually large — it will run past the divider
  (and be killed and requeued if it opted in);
* FL (false large) = predicted large but actually small;
* TL (true large)  = predicted large and actually large.

Then

* accuracy = (TS + TL) / n
* precision (small) = TS / (TS + FS), recall (small) = TS / (TS + FL)
* false-small rate = FS / (FS + TS), the share of predicted-small jobs that are large
  (= 1 - precision); false-large rate = FL / (FL + TL), the share of predicted-large jobs
  that are small.

A ratio with an empty denominator is NaN in the reports and ``null`` in JSON blocks.
"""

from __future__ import annotations

import math

import numpy as np


def _ratio(a: int, b: int) -> float:
    return a / b if b else float("nan")


def confusion(actual_small: np.ndarray, predicted_small: np.ndarray) -> dict[str, int]:
    """The four counts, from scikit-learn's confusion matrix (rows actual, columns predicted)."""
    from sklearn.metrics import confusion_matrix

    actual_small = np.asarray(actual_small, dtype=bool).reshape(-1)
    predicted_small = np.asarray(predicted_small, dtype=bool).reshape(-1)
    if len(actual_small) == 0:  # scikit-learn refuses an empty matrix; the counts are zero
        return {"TS": 0, "FS": 0, "FL": 0, "TL": 0}
    (ts, fl), (fs, tl) = confusion_matrix(actual_small, predicted_small, labels=[True, False])
    return {"TS": int(ts), "FS": int(fs), "FL": int(fl), "TL": int(tl)}


def classification_summary(actual_small: np.ndarray, predicted_small: np.ndarray) -> dict:
    """Counts and ratios (module docstring) with the confusion matrix."""
    c = confusion(actual_small, predicted_small)
    ts, fs, fl, tl = c["TS"], c["FS"], c["FL"], c["TL"]
    return {
        "jobs": ts + fs + fl + tl,
        "accuracy": _ratio(ts + tl, ts + fs + fl + tl),
        "precision": _ratio(ts, ts + fs),
        "recall": _ratio(ts, ts + fl),
        "false_small_rate": _ratio(fs, fs + ts),
        "false_large_rate": _ratio(fl, fl + tl),
        "confusion": c,
    }


BLOCK_KEYS = ("accuracy", "precision", "recall", "false_small_rate", "false_large_rate")


def classification_block(actual_small: np.ndarray, predicted_small: np.ndarray) -> dict:
    """The ``classification`` JSON block of a run: the five ratios, NaN as None."""
    summary = classification_summary(actual_small, predicted_small)
    return {k: None if math.isnan(summary[k]) else summary[k] for k in BLOCK_KEYS}


def weekly_table(weekly_report: list[dict]) -> list[dict]:
    """One flat row per week (for CSV or a rich table): week, jobs, divider, ratios, counts."""
    rows = []
    for week in weekly_report:
        row = {k: week.get(k) for k in ("week", "start", "jobs", "trained_on", "divider", *BLOCK_KEYS)}
        row.update(week.get("confusion", {}))
        rows.append(row)
    return rows


def importance_distribution(importances: np.ndarray, names: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """Per feature, the distribution of its importance over the retrained weeks."""
    imp = np.asarray(importances, dtype=np.float64).reshape(-1, len(names))
    if len(imp) == 0:
        return {}
    quantiles = np.quantile(imp, [0.0, 0.25, 0.5, 0.75, 1.0], axis=0)
    return {
        name: {
            "mean": float(imp[:, k].mean()),
            "std": float(imp[:, k].std()),
            "min": float(quantiles[0, k]),
            "q25": float(quantiles[1, k]),
            "median": float(quantiles[2, k]),
            "q75": float(quantiles[3, k]),
            "max": float(quantiles[4, k]),
        }
        for k, name in enumerate(names)
    }


def walkforward_report(result) -> dict:
    """Everything a run reports: overall block and counts, per-week rows, importances."""
    summary = result.summary()
    return {
        "mode": result.mode,
        "seconds": result.seconds,
        "classification": result.classification(),
        "confusion": summary["confusion"],
        "jobs": summary["jobs"],
        "weeks": weekly_table(result.weekly_report),
        "importances": importance_distribution(result.importances, result.feature_names),
    }
