"""``rush experiment speculative`` at a tiny size: --json, --out, and bad flags (exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rush.cli.main import app


@pytest.fixture()
def trace_file(tmp_path: Path) -> Path:
    """Two users, each rerunning one executable (SWF field 14) with varying runtimes."""
    lines = ["; MaxProcs: 4"]
    job = 1
    for k in range(30):
        for user, app_id, base in ((1, 7, 300), (2, 9, 1200)):
            runtime = base + (k * 37 % 11) * base // 10
            submit = k * 400 + user
            fields = [job, submit, 0, runtime, 1, -1, -1, 1, 4 * base, -1, 1, user, 1, app_id, 1, 1, -1, -1]
            lines.append(" ".join(str(v) for v in fields))
            job += 1
    path = tmp_path / "apps.swf"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cli_json_and_out(trace_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["experiment", "speculative", "--distributions", "exponential,uniform", "--samples", "1,5"]
    args += ["--repetitions", "2", "--trace", str(trace_file), "--history", "5", "--seed", "3"]
    args += ["--cluster", "serial", "--json", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) >= {"protocol", "optima", "ratios", "trace", "failures"}
    assert data["failures"] == []
    assert data["optima"]["uniform"]["reservations"] == [20.0]  # the known optimum: b once
    keys = {(r["distribution"], r["n"], r["estimator"]) for r in data["ratios"]}
    assert len(keys) == 2 * 2 * 4
    assert all(r["mean_ratio"] >= 0.999 for r in data["ratios"])
    trace = {r["estimator"]: r for r in data["trace"]}
    assert set(trace) == {"walltime", "mean-doubling", "discrete", "continuous"}
    assert trace["walltime"]["reservation_kills"] == 0 and trace["walltime"]["opted_in"] == 0
    assert trace["discrete"]["opted_in"] > 0
    assert "executable" in trace["discrete"]["application_key"]
    for name in ("ratios.csv", "ratios_summary.csv", "trace.csv", "summary.json"):
        assert (out / "results" / name).stat().st_size > 0
    assert (out / "plots" / "ratio_vs_n.png").stat().st_size > 0
    assert (out / "plots" / "trace.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--samples", "5,abc"], "--samples"),
        (["--samples", "-3"], "--samples"),
        (["--samples", "10000000"], "--samples"),
        (["--distributions", "cauchy"], "--distributions"),
        (["--distributions", ","], "--distributions"),
        (["--repetitions", "0"], "--repetitions"),
        (["--history", "0"], "--history"),
        (["--seed", "-1"], "--seed"),
        (["--trace", "no-such-trace-anywhere"], "no-such-trace"),
    ],
)
def test_bad_flags_exit_2_and_write_nothing(flags: list[str], message: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    base = ["experiment", "speculative", "--seed", "1", "--trace", "none", "--out", str(out)]
    proc = subprocess.run(
        [sys.executable, "-m", "rush", *base, *flags], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert not out.exists()
