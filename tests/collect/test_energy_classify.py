"""Energy-profile classification on synthetic power series with a known class each."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rush.energy.classify import (
    ProfileError,
    ProfileThresholds,
    classify_power,
    classify_trace,
    read_power_csv,
    resample,
)

MINUTES = 120
STEP = 10.0  # seconds between samples


def _series(kind: str, rng: np.random.Generator, minutes: int = MINUTES) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(0.0, minutes * 60.0, STEP) + 1_700_000_000.0
    m = (t - t[0]) / 60.0
    noise = rng.normal(0.0, 1.0, t.size)
    if kind == "constant":
        w = 300.0 + 3.0 * noise
    elif kind == "periodic":  # 9-minute compute/communicate cycle
        w = 300.0 + 100.0 * np.sin(2 * np.pi * m / 9.0) + 5.0 * noise
    elif kind == "square":  # on/off phases every 6 minutes
        w = 300.0 + 100.0 * np.sign(np.sin(2 * np.pi * m / 12.0)) + 5.0 * noise
    elif kind == "non-stationary":  # slow drift from 200 W to 400 W
        w = 200.0 + 200.0 * m / m[-1] + 5.0 * noise
    elif kind == "stationary-variable":  # wide noise around a fixed level
        w = 300.0 + 60.0 * noise
    else:
        raise AssertionError(kind)
    return t, w


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("constant", "constant"),
        ("periodic", "periodic"),
        ("square", "periodic"),
        ("non-stationary", "non-stationary"),
        ("stationary-variable", "stationary-variable"),
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_synthetic_classes(kind: str, expected: str, seed: int) -> None:
    t, w = _series(kind, np.random.default_rng(seed))
    result = classify_power(t, w)
    assert result.profile == expected, result.reason
    assert result.points <= MINUTES - 2 * 12  # 10 % trimmed at each end of 120 bins
    assert abs(result.mean_watts - 300.0) < 15.0


def test_periodic_reports_its_period() -> None:
    t, w = _series("periodic", np.random.default_rng(3))
    result = classify_power(t, w)
    assert result.dominant_period_seconds is not None
    assert abs(result.dominant_period_seconds - 9 * 60) < 60


def test_trimming_ignores_startup_and_teardown() -> None:
    rng = np.random.default_rng(4)
    t, w = _series("constant", rng)
    m = (t - t[0]) / 60.0
    w = w.copy()
    w[m < 10] = 80.0  # staging input: 10 of 120 minutes, inside the 12 bins trimmed at the start
    w[m >= MINUTES - 10] = 500.0  # writing output (too long to be dropped as outliers)
    assert classify_power(t, w).profile == "constant"
    # Without trimming the same job drifts.
    assert classify_power(t, w, ProfileThresholds(trim_fraction=0.0)).profile != "constant"


def test_outliers_are_dropped() -> None:
    rng = np.random.default_rng(5)
    t, w = _series("constant", rng)
    w = w.copy()
    spikes = np.isin(np.floor((t - t[0]) / 60).astype(int), [40, 77])
    w[spikes] = 900.0  # two one-minute sensor glitches
    result = classify_power(t, w)
    assert result.profile == "constant"
    assert result.dropped_outliers == 2


def test_too_short_series_is_a_clear_error() -> None:
    t, w = _series("constant", np.random.default_rng(6), minutes=20)
    with pytest.raises(ProfileError, match="too short") as info:
        classify_power(t, w, where="job 42")
    assert info.value.where == "job 42"
    assert info.value.fix


def test_empty_and_mismatched_input() -> None:
    with pytest.raises(ProfileError, match="no finite"):
        classify_power([], [])
    with pytest.raises(ProfileError, match="equal length"):
        classify_power([1.0, 2.0], [1.0])


def test_resample_fills_gaps_by_interpolation() -> None:
    t = np.array([0.0, 30.0, 60.0, 180.0, 200.0])
    w = np.array([10.0, 20.0, 30.0, 70.0, 90.0])
    bins = resample(t, w, 60.0)
    np.testing.assert_allclose(bins, [15.0, 30.0, 55.0, 80.0])


def test_bad_thresholds_rejected() -> None:
    with pytest.raises(ProfileError):
        ProfileThresholds(trim_fraction=0.6)
    with pytest.raises(ProfileError):
        ProfileThresholds(windows=6, min_points=10)


def _write_trace(path: Path, jobs: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    lines = ["job_id,timestamp,watts"]
    for job, (t, w) in jobs.items():
        lines += [f"{job},{a:.1f},{b:.3f}" for a, b in zip(t, w, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def test_trace_csv_classifies_each_job(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    jobs = {
        "101": _series("constant", rng),
        "102": _series("periodic", rng),
        "103": _series("non-stationary", rng),
        "104": _series("constant", rng, minutes=10),
    }
    path = tmp_path / "trace.csv"
    _write_trace(path, jobs)
    out = classify_trace(path)
    assert out["101"].profile == "constant"  # type: ignore[union-attr]
    assert out["102"].profile == "periodic"  # type: ignore[union-attr]
    assert out["103"].profile == "non-stationary"  # type: ignore[union-attr]
    assert isinstance(out["104"], ProfileError)


def test_bad_csv_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "job.csv"
    path.write_text("timestamp,watts\n0,100\n60,abc\n")
    with pytest.raises(ProfileError) as info:
        read_power_csv(path)
    assert info.value.where == f"{path}:3"
    path.write_text("time,power\n0,100\n")
    with pytest.raises(ProfileError, match="missing column"):
        read_power_csv(path)


def test_cli_single_job_and_trace(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from rush.cli.main import app

    rng = np.random.default_rng(8)
    t, w = _series("periodic", rng)
    job = tmp_path / "job.csv"
    job.write_text("timestamp,watts\n" + "".join(f"{a},{b}\n" for a, b in zip(t, w, strict=True)))
    runner = CliRunner()
    result = runner.invoke(app, ["energy", "classify", str(job)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("periodic:")
    result = runner.invoke(app, ["energy", "classify", str(job), "--json"])
    assert json.loads(result.stdout)["profile"] == "periodic"

    trace = tmp_path / "trace.csv"
    _write_trace(trace, {"7": _series("constant", rng), "8": _series("constant", rng, minutes=5)})
    result = runner.invoke(app, ["energy", "classify", "--trace", str(trace)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "job_id,profile,reason"
    assert lines[1].startswith("7,constant,")
    assert lines[2].startswith("8,unclassified,series too short")

    result = runner.invoke(app, ["energy", "classify"])
    assert result.exit_code != 0
