"""Classification quality of the small/large runtime classifier.

With the small class as positive: TS = predicted small and small, FS = predicted small
but large (a *false small*: it will outrun the divider), FL = predicted large but small,
TL = predicted large and large.

* accuracy = (TS + TL) / n
* precision = TS / (TS + FS), recall = TS / (TS + FL) (of the small class)
* false-small rate = FS / (FS + TS), false-large rate = FL / (FL + TL)

Undefined ratios (an empty denominator) are NaN.
"""

from __future__ import annotations

import numpy as np


def _ratio(a: int, b: int) -> float:
    return a / b if b else float("nan")


def classification_summary(actual_small: np.ndarray, predicted_small: np.ndarray) -> dict:
    actual_small = np.asarray(actual_small, dtype=bool)
    predicted_small = np.asarray(predicted_small, dtype=bool)
    ts = int(np.sum(predicted_small & actual_small))
    fs = int(np.sum(predicted_small & ~actual_small))
    fl = int(np.sum(~predicted_small & actual_small))
    tl = int(np.sum(~predicted_small & ~actual_small))
    return {
        "jobs": ts + fs + fl + tl,
        "accuracy": _ratio(ts + tl, ts + fs + fl + tl),
        "precision": _ratio(ts, ts + fs),
        "recall": _ratio(ts, ts + fl),
        "false_small_rate": _ratio(fs, fs + ts),
        "false_large_rate": _ratio(fl, fl + tl),
        "confusion": {"TS": ts, "FS": fs, "FL": fl, "TL": tl},
    }
