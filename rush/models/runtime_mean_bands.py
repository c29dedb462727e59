"""The queued job's mean runtime calibrated per band of itself (issue 29, rule H8 of
``sim/runtime_predictions/estimates/dev_log.md``), part of the runtime-quantile model.

The mean read off the quantile function (fitted in log runtime) is too long for jobs predicted
short and too short for jobs predicted long, on every trace studied (D5 of that log). A
:class:`MeanBands` holds, for each band of predicted mean (a factor of 2 wide: floor(log2
mean), means under 1 s in band 0), the sum of real runtimes over the sum of predicted means of
the model's training rows in that band, their predictions made *out of sample* (by earlier
models in a walk-forward, or by cross-fitting at a retrain); a band with fewer than
``MIN_JOBS`` rows keeps factor 1. A queued job runs its mean times its band's factor, at least
1 s and never above its request (:meth:`MeanBands.apply`, the one place the factor is applied:
live estimates, the simulator's predictor and the offline study all call it).

Bad calibration data (a factor NaN, infinite, zero or negative; bands not strictly increasing;
lists of different lengths) is refused with a ModelError naming the place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rush.errors import ModelError

MIN_JOBS = 100


def mean_bands_of(mean: np.ndarray) -> np.ndarray:
    """The band of each predicted mean: floor(log2 mean), means under 1 s in band 0."""
    return np.floor(np.log2(np.maximum(np.asarray(mean, dtype=np.float64), 1.0))).astype(np.int64)


@dataclass(frozen=True)
class MeanBands:
    """Factors per band of predicted mean (module docstring); bands absent: factor 1."""

    bands: tuple[int, ...] = ()
    factors: tuple[float, ...] = ()

    def checked(self, where: str = "mean_bands") -> MeanBands:
        fix = "retrain the model (rush train runtime-quantiles TRACE --out FILE)"
        if len(self.bands) != len(self.factors):
            raise ModelError(f"{len(self.bands)} bands but {len(self.factors)} factors", where=where, fix=fix)
        factors = np.asarray(self.factors, dtype=np.float64)
        if not np.all(np.isfinite(factors) & (factors > 0)):
            raise ModelError(
                f"a band's factor is NaN, infinite, zero or negative: {list(self.factors)}",
                where=f"{where}.factors",
                fix=fix,
            )
        bands = np.asarray(self.bands)
        if len(bands) and (
            not np.issubdtype(bands.dtype, np.integer) or np.any(bands < 0) or np.any(np.diff(bands) <= 0)
        ):
            raise ModelError(
                f"bands must be whole numbers >= 0 in strictly increasing order: {list(self.bands)}",
                where=f"{where}.bands",
                fix=fix,
            )
        return self

    def factor(self, mean: np.ndarray) -> np.ndarray:
        """Each mean's factor (1 outside the fitted bands)."""
        band = mean_bands_of(mean)
        out = np.ones(len(band))
        if self.bands:
            bands = np.asarray(self.bands, dtype=np.int64)
            at = np.clip(np.searchsorted(bands, band), 0, len(bands) - 1)
            hit = bands[at] == band
            out[hit] = np.asarray(self.factors, dtype=np.float64)[at[hit]]
        return out

    def apply(self, mean: np.ndarray, requested_time: np.ndarray) -> np.ndarray:
        """The calibrated means: mean times its band's factor, at least 1 s, never above the request."""
        mean = np.asarray(mean, dtype=np.float64)
        request = np.asarray(requested_time, dtype=np.float64)
        return np.minimum(np.maximum(mean * self.factor(mean), 1.0), request)

    def to_card(self) -> dict:
        return {"bands": [int(b) for b in self.bands], "factors": [float(f) for f in self.factors]}

    @classmethod
    def from_card(cls, value: dict | None, where: str = "mean_bands") -> MeanBands | None:
        if value is None:
            return None
        try:
            bands = tuple(value["bands"])
            factors = tuple(float(f) for f in value["factors"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(
                f"unreadable mean bands {value!r}: {exc}",
                where=where,
                fix="retrain the model (rush train runtime-quantiles TRACE --out FILE)",
            ) from exc
        if not all(isinstance(b, int) and not isinstance(b, bool) for b in bands):
            raise ModelError(
                f"bands must be whole numbers: {list(bands)}",
                where=f"{where}.bands",
                fix="retrain the model (rush train runtime-quantiles TRACE --out FILE)",
            )
        return cls(bands, factors).checked(where)


def fit_mean_bands(mean: np.ndarray, runtime: np.ndarray, min_jobs: int = MIN_JOBS) -> MeanBands:
    """The bands' factors from out-of-sample predicted ``mean`` s and real (clipped) ``runtime`` s
    of the same rows; rows with either not finite are left out."""
    mean = np.asarray(mean, dtype=np.float64)
    runtime = np.asarray(runtime, dtype=np.float64)
    ok = np.isfinite(mean) & np.isfinite(runtime) & (runtime >= 0)
    band = mean_bands_of(mean[ok])
    bands, factors = [], []
    for b in np.unique(band):
        inside = band == b
        predicted, real = float(mean[ok][inside].sum()), float(runtime[ok][inside].sum())
        if int(inside.sum()) >= min_jobs and predicted > 0 and real > 0:
            bands.append(int(b))
            factors.append(real / predicted)
    return MeanBands(tuple(bands), tuple(factors)).checked()


__all__ = ["MIN_JOBS", "MeanBands", "fit_mean_bands", "mean_bands_of"]
