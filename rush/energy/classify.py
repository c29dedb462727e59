"""Classify a job's power profile: constant, periodic, stationary-variable or non-stationary.

Pipeline for one job's power series (timestamp seconds, watts):

1. **Per-minute aggregation** — mean watts per ``resample_seconds`` bin from the first sample;
   empty bins (sampling gaps) are filled by linear interpolation so the DFT sees even spacing.
2. **Trim start and end phases** — ``trim_fraction`` (default 10 %) of the bins is dropped at each
   end (rounded up, at least one bin), because start-up (I/O, setup) and tear-down (output, cleanup)
   are not representative of the job's compute phase.
3. **Outliers** — bins with ``|z| > outlier_z`` (default 3) are dropped (a sensor glitch, a short
   checkpoint); the z-score uses the trimmed series' mean and SD.
4. Tests on the normalised signal ``x / mean(x)`` (so thresholds are fractions of the job's mean power),
   in this order — first match wins:

   a. **non-stationary**: split into ``windows`` (6) equal windows; SD of the window means
      ``> stationarity_sd`` (0.10). A drift or a phase change moves the window means.
   b. **constant**: SD of the whole signal ``< constant_sd`` (0.05).
   c. **periodic**: the dominant DFT component (peak bin plus its two neighbours, to catch leakage
      of a period that does not fall on a bin) holds ``> periodic_strength`` (0.6) of the spectral
      power (DC excluded).
   d. otherwise **stationary-variable**.

   Non-stationarity is tested first because a trend puts its power in the lowest DFT bins and would
   otherwise look periodic. Consequence: a period longer than about half a window (a sixth of the
   trimmed job) moves the window means and is reported non-stationary — which is what it is at
   that time scale. Constant comes before periodic because a flat signal's tiny residual spectrum
   can be dominated by one bin.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from rush.errors import RushError

CLASSES = ("constant", "periodic", "stationary-variable", "non-stationary")


class ProfileError(RushError):
    """A power series cannot be classified (too short, empty, non-numeric)."""


@dataclass(frozen=True)
class ProfileThresholds:
    """Tunable parameters of :func:`classify_power`; defaults documented in the module docstring."""

    resample_seconds: float = 60.0
    trim_fraction: float = 0.10  # of the bins, at each end
    outlier_z: float = 3.0
    windows: int = 6
    stationarity_sd: float = 0.10  # SD of window means of x/mean(x)
    constant_sd: float = 0.05  # SD of x/mean(x)
    periodic_strength: float = 0.6  # fraction of non-DC spectral power in the dominant component
    # Fewer bins than this cannot carry 6 windows and a spectrum: at 30 bins white noise passes the
    # periodic test < 0.5 % of the time (2 % at 24 bins).
    min_points: int = 30

    def __post_init__(self) -> None:
        if not 0 <= self.trim_fraction < 0.5:
            raise ProfileError(
                f"trim_fraction must be in [0, 0.5), got {self.trim_fraction}", where="energy thresholds"
            )
        if self.windows < 2 or self.min_points < 2 * self.windows:
            raise ProfileError(
                f"need windows >= 2 and min_points >= 2*windows (got {self.windows}, {self.min_points})",
                where="energy thresholds",
            )
        if self.resample_seconds <= 0:
            raise ProfileError("resample_seconds must be > 0", where="energy thresholds")


@dataclass(frozen=True)
class ProfileResult:
    """The class and the figures that decided it (for the evidence trail)."""

    profile: str
    points: int  # bins used for the tests
    mean_watts: float
    window_means_sd: float
    normalized_sd: float
    periodic_strength: float
    dominant_period_seconds: float | None
    reason: str = ""
    dropped_outliers: int = 0
    extra: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def resample(timestamps: np.ndarray, watts: np.ndarray, bin_seconds: float) -> np.ndarray:
    """Mean watts per bin from the first timestamp; empty bins linearly interpolated."""
    order = np.argsort(timestamps, kind="stable")
    t = timestamps[order] - timestamps[order][0]
    w = watts[order]
    index = np.floor(t / bin_seconds).astype(np.int64)
    n_bins = int(index[-1]) + 1
    sums = np.bincount(index, weights=w, minlength=n_bins)
    counts = np.bincount(index, minlength=n_bins)
    filled = counts > 0
    means = np.empty(n_bins)
    means[filled] = sums[filled] / counts[filled]
    if not filled.all():
        positions = np.arange(n_bins)
        means[~filled] = np.interp(positions[~filled], positions[filled], means[filled])
    return means


def _spectral_strength(x: np.ndarray) -> tuple[float, int]:
    """Fraction of non-DC power in the dominant bin and its neighbours; and that bin's index."""
    power = np.abs(np.fft.rfft(x - x.mean())) ** 2
    power = power[1:]  # drop DC
    total = float(power.sum())
    if total <= 0.0 or power.size == 0:
        return 0.0, 0
    peak = int(np.argmax(power))
    lo, hi = max(peak - 1, 0), min(peak + 2, power.size)
    return float(power[lo:hi].sum()) / total, peak + 1


def classify_power(
    timestamps: Sequence[float] | np.ndarray,
    watts: Sequence[float] | np.ndarray,
    thresholds: ProfileThresholds | None = None,
    *,
    where: str = "power series",
) -> ProfileResult:
    """Classify one job's power series; raise :class:`ProfileError` when it is too short or bad."""
    th = thresholds or ProfileThresholds()
    t = np.asarray(timestamps, dtype=float)
    w = np.asarray(watts, dtype=float)
    if t.shape != w.shape or t.ndim != 1:
        raise ProfileError("timestamps and watts must be 1-D and of equal length", where=where)
    keep = np.isfinite(t) & np.isfinite(w)
    t, w = t[keep], w[keep]
    if t.size == 0:
        raise ProfileError("no finite (timestamp, watts) samples", where=where, fix="check the input columns")
    bins = resample(t, w, th.resample_seconds)
    trim = max(1, math.ceil(th.trim_fraction * bins.size)) if th.trim_fraction > 0 else 0
    needed = th.min_points + 2 * trim
    trimmed = bins[trim : bins.size - trim] if trim else bins
    if trimmed.size < th.min_points:
        minutes = th.min_points / (1 - 2 * th.trim_fraction) * th.resample_seconds / 60
        raise ProfileError(
            f"series too short to classify: {bins.size} bins of {th.resample_seconds:g} s, "
            f"{trimmed.size} after trimming, need {th.min_points} (at least {needed} bins)",
            where=where,
            fix=f"classify jobs of at least ~{math.ceil(minutes)} minutes, or lower min_points/resample_seconds",
        )
    mu, sd = float(trimmed.mean()), float(trimmed.std())
    x = trimmed
    if sd > 0:
        x = trimmed[np.abs(trimmed - mu) / sd <= th.outlier_z]
    dropped = trimmed.size - x.size
    if x.size < th.min_points:
        raise ProfileError(
            f"only {x.size} bins left after dropping outliers, need {th.min_points}", where=where
        )
    mean = float(x.mean())
    if mean <= 0:
        raise ProfileError(
            f"mean power is {mean:g} W; cannot normalise", where=where, fix="check the watts column"
        )
    norm = x / mean
    window_means = np.array([chunk.mean() for chunk in np.array_split(norm, th.windows)])
    win_sd = float(window_means.std())
    norm_sd = float(norm.std())
    strength, peak = _spectral_strength(norm)
    period = norm.size * th.resample_seconds / peak if peak else None

    def result(profile: str, reason: str) -> ProfileResult:
        return ProfileResult(
            profile, int(x.size), mean, win_sd, norm_sd, strength, period, reason, int(dropped)
        )

    if win_sd > th.stationarity_sd:
        return result(
            "non-stationary", f"SD of {th.windows} window means {win_sd:.3f} > {th.stationarity_sd}"
        )
    if norm_sd < th.constant_sd:
        return result("constant", f"normalised SD {norm_sd:.3f} < {th.constant_sd}")
    if strength > th.periodic_strength:
        return result(
            "periodic", f"dominant component holds {strength:.2f} > {th.periodic_strength} of spectral power"
        )
    return result("stationary-variable", f"normalised SD {norm_sd:.3f}, dominant component {strength:.2f}")


# ----------------------------------------------------------------------------------- CSV inputs


def _read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    try:
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            rows = list(reader)
            return list(reader.fieldnames or []), rows
    except OSError as exc:
        raise ProfileError(f"cannot read: {exc.strerror}", where=str(path)) from exc


def _number(value: str | None, path: Path, line: int, column: str) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ProfileError(
            f"column {column!r} is not a number: {value!r}",
            where=f"{path}:{line}",
            fix="fix or remove the line",
        ) from None


def _require(columns: Iterable[str], needed: Sequence[str], path: Path) -> None:
    missing = [c for c in needed if c not in columns]
    if missing:
        raise ProfileError(
            f"missing column(s) {', '.join(missing)}; found {', '.join(columns) or 'none'}",
            where=str(path),
            fix=f"the CSV header must contain {', '.join(needed)}",
        )


def read_power_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A job's series from a CSV with ``timestamp`` (unix seconds) and ``watts`` columns."""
    columns, rows = _read_csv(path)
    _require(columns, ("timestamp", "watts"), path)
    t = [_number(r["timestamp"], path, i + 2, "timestamp") for i, r in enumerate(rows)]
    w = [_number(r["watts"], path, i + 2, "watts") for i, r in enumerate(rows)]
    return np.array(t), np.array(w)


def read_power_trace(path: Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Series per job from a CSV with ``job_id``, ``timestamp``, ``watts`` columns."""
    columns, rows = _read_csv(path)
    _require(columns, ("job_id", "timestamp", "watts"), path)
    series: dict[str, tuple[list[float], list[float]]] = {}
    for i, r in enumerate(rows):
        ts, ws = series.setdefault(r["job_id"], ([], []))
        ts.append(_number(r["timestamp"], path, i + 2, "timestamp"))
        ws.append(_number(r["watts"], path, i + 2, "watts"))
    return {job: (np.array(ts), np.array(ws)) for job, (ts, ws) in series.items()}


def classify_trace(
    path: Path, thresholds: ProfileThresholds | None = None
) -> dict[str, ProfileResult | ProfileError]:
    """Classify every job of a trace CSV; a job that cannot be classified keeps its error."""
    out: dict[str, ProfileResult | ProfileError] = {}
    for job, (t, w) in read_power_trace(path).items():
        try:
            out[job] = classify_power(t, w, thresholds, where=f"{path} job {job}")
        except ProfileError as exc:
            out[job] = exc
    return out


def job_power_series(
    store_path: Path,
    hosts: Sequence[str],
    start: float,
    end: float,
    metric: str = "rapl_package_watts",
    bin_seconds: float = 60.0,
) -> tuple[np.ndarray, np.ndarray]:
    """A job's power from the feature store: per-host ``bin_seconds`` means of ``metric``, summed.

    Hosts sample at different instants, so each host is binned first (bins counted from
    ``start``); only bins where every host has data are kept, so a missing host never shows up
    as a power drop.
    """
    from rush.collect.service import open_store

    store = open_store(store_path)
    try:
        samples = [s for s in store.samples(hosts=list(hosts), start=start, end=end) if s.metric == metric]
    finally:
        store.close()
    per_host: dict[str, dict[int, list[float]]] = {h: {} for h in hosts}
    for s in samples:
        if s.host in per_host:
            per_host[s.host].setdefault(int((s.timestamp - start) // bin_seconds), []).append(s.value)
    silent = [h for h, bins in per_host.items() if not bins]
    if silent:
        raise ProfileError(
            f"no {metric!r} samples for host(s) {', '.join(silent)} in [{start:g}, {end:g}]",
            where=str(store_path),
            fix="check the hosts, the window and that a RAPL source is collected",
        )
    common = sorted(set.intersection(*(set(bins) for bins in per_host.values())))
    t = np.array([start + (b + 0.5) * bin_seconds for b in common])
    w = np.array([sum(float(np.mean(per_host[h][b])) for h in hosts) for b in common])
    return t, w
