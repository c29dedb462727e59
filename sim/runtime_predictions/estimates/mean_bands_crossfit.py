"""The mean's bands from the walk-forward's out-of-sample means against those from cross-fitted
halves (what ``rush train runtime-quantiles`` does), on the same training rows of three weeks.

Run: ``python sim/runtime_predictions/estimates/mean_bands_crossfit.py TRACE`` (the trace's
newest ``t23`` walk-forward that ``run.py`` cached under ``RUSH_CACHE``, read through
``rush.studies.study_cache``: a pickle runs code, so the script reads only its own cache, never
a file named on its command line); prints each band's two factors.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from rush.models.runtime_mean_bands import fit_mean_bands
from rush.models.runtime_quantiles import RuntimeQuantileRegressor, mean_of_quantiles
from rush.models.runtime_quantiles_features import REQUEST_COLUMN
from rush.models.runtime_quantiles_walkforward import WEEK
from rush.studies.script_args import run_main


def main(trace: str) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from class_protocol import default_walkforward

    wf = default_walkforward(trace)
    mean = wf.mean()
    origin = float(wf.submit[0])
    order = np.argsort(wf.end, kind="stable")
    ends = wf.end[order]
    weeks = int(wf.week[-1]) + 1
    for k in (int(weeks * share) for share in (0.3, 0.6, 0.95)):
        train = order[: int(np.searchsorted(ends, origin + WEEK * k, side="left"))][-10_000:]
        predicted = train[np.isfinite(wf.proba_small[train])]
        walkforward = fit_mean_bands(mean[predicted], wf.runtime[predicted])
        halves = np.array_split(np.arange(len(train)), 2)
        crossed = np.full(len(train), np.nan)
        for i, half in enumerate(halves):
            other = train[halves[1 - i]]
            model = RuntimeQuantileRegressor().fit(wf.features[other], wf.runtime[other])
            X = wf.features[train[half]]
            crossed[half] = mean_of_quantiles(
                model.predict_log_quantiles(X), model.levels_, X[:, REQUEST_COLUMN]
            )
        cross_fit = fit_mean_bands(crossed, wf.runtime[train])
        a = dict(zip(walkforward.bands, walkforward.factors, strict=True))
        b = dict(zip(cross_fit.bands, cross_fit.factors, strict=True))
        print(f"week {k} of {weeks}: {len(predicted)} rows with a walk-forward prediction, {len(train)} rows")
        for band in sorted(set(a) | set(b)):
            print(f"  band 2^{band} s: walk-forward {a.get(band, 1.0):.2f}, cross-fit {b.get(band, 1.0):.2f}")


if __name__ == "__main__":
    run_main(main, description=__doc__.splitlines()[0])
