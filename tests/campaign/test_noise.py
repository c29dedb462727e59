"""The noise job generator (collectors/noise.py): its seeded schedule, its log, its interference."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from itertools import islice
from pathlib import Path

import pytest

from rush.campaign.records import noise_during, noise_intervals
from rush.collect.procfs import ProcfsCollector
from tests.campaign.conftest import NOISE
from tests.script_module import load_script


def _module():  # noqa: ANN202 - the script's module
    return load_script(NOISE, "rush_noise")


noise = _module()


def _periods(seed: int, n: int = 40, **kwargs: object) -> list:
    return list(islice(noise.schedule(seed, **kwargs), n))


def test_schedule_is_seeded_alternating_and_in_range() -> None:
    periods = _periods(5, kinds=("memory", "io"), on=(2.0, 4.0), off=(1.0, 3.0))
    assert periods == _periods(5, kinds=("memory", "io"), on=(2.0, 4.0), off=(1.0, 3.0))
    assert periods != _periods(6, kinds=("memory", "io"), on=(2.0, 4.0), off=(1.0, 3.0))
    assert periods[0].start == 0.0 and periods[0].kind is None  # off first by default
    for before, after in zip(periods, periods[1:], strict=False):
        assert after.start == before.end  # contiguous
        assert (before.kind is None) != (after.kind is None)  # alternating
    for p in periods:
        low, high = (1.0, 3.0) if p.kind is None else (2.0, 4.0)
        assert low <= p.end - p.start <= high
    assert {p.kind for p in periods if p.kind} == {"memory", "io"}  # 20 draws see both


def test_start_on_begins_with_interference() -> None:
    assert _periods(1, 2, start_on=True)[0].kind in noise.KINDS


def _run(args: list[str], tmp_path: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(NOISE), *args], capture_output=True, text=True, cwd=tmp_path, timeout=timeout
    )


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_log_follows_the_schedule_and_ends(tmp_path: Path) -> None:
    log = tmp_path / "noise.jsonl"
    args = ["--seed", "11", f"--log={log}", "--on", "1:1.5", "--off", "0.5:1", "--duration", "6"]
    run = _run([*args, f"--workdir={tmp_path}"], tmp_path)
    assert run.returncode == 0, run.stderr
    lines = _log(log)
    header, events = lines[0], lines[1:]
    assert header["format"] == "rush-noise/1" and header["seed"] == 11
    assert events[-1]["event"] == "end"
    switches = events[:-1]
    assert [e["event"] for e in switches] == ["on", "off"] * (len(switches) // 2)  # paired, in order
    planned = [p.kind for p in islice(noise.schedule(11, on=(1.0, 1.5), off=(0.5, 1.0)), 20) if p.kind]
    kinds = [e["kind"] for e in switches if e["event"] == "on"]
    assert kinds and kinds == planned[: len(kinds)]  # the seed's kinds, in the seed's order
    times = [e["t"] for e in events]
    assert times == sorted(times) and times[0] >= header["start"]
    assert not list(tmp_path.glob(".rush-noise-*"))  # the io kind's file is removed
    found = noise_intervals(log, now=time.time())
    assert found is not None and len(found[1]) == len(kinds)
    on, off, _ = found[1][0]
    assert noise_during(found[1], on, off) and not noise_during(found[1], header["start"], on)


def test_sigterm_stops_workers_and_logs_the_end(tmp_path: Path) -> None:
    log = tmp_path / "noise.jsonl"
    proc = subprocess.Popen(
        [
            sys.executable,
            str(NOISE),
            "--seed=1",
            f"--log={log}",
            "--kinds=memory",
            "--start-on",
            "--on=600:600",
        ],
        cwd=tmp_path,
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline and not (log.exists() and '"on"' in log.read_text()):
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    events = [e.get("event") for e in _log(log)[1:]]
    assert events == ["on", "off", "end"]


def test_network_noise_moves_the_loopback_counters(tmp_path: Path) -> None:
    # The interference is real: the procfs collector sees the bytes it sends over lo.
    collector = ProcfsCollector()
    collector.collect()
    before = collector.tracker._last["net_xmit_bytes"][1]
    log = tmp_path / "noise.jsonl"
    run = _run(
        ["--seed=2", f"--log={log}", "--kinds=network", "--start-on", "--on=2:2", "--duration=2"], tmp_path
    )
    assert run.returncode == 0, run.stderr
    collector.collect()
    after = collector.tracker._last["net_xmit_bytes"][1]
    assert after - before >= 16 * 2**20  # at least one burst of 16 x 1 MiB messages


@pytest.mark.parametrize(
    "args",
    [
        ["--log=x.jsonl"],  # no seed
        ["--seed=1"],  # no log
        ["--seed=1", "--log=x.jsonl", "--kinds=cpu"],
        ["--seed=1", "--log=x.jsonl", "--kinds="],
        ["--seed=1", "--log=x.jsonl", "--on=0:5"],
        ["--seed=1", "--log=x.jsonl", "--on=5:1"],
        ["--seed=1", "--log=x.jsonl", "--off=nan:1"],
        ["--seed=1", "--log=x.jsonl", "--duration=nan"],
        ["--seed=1", "--log=x.jsonl", "--duration=1e12"],
        ["--seed=1", "--log=x.jsonl", "--workers=0"],
        ["--seed=1", "--log=x.jsonl", "--workers=100000"],
    ],
)
def test_hostile_arguments_exit_2_and_write_nothing(args: list[str], tmp_path: Path) -> None:
    run = _run(args, tmp_path)
    assert run.returncode == 2
    assert "error" in run.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_io_kind_refuses_a_missing_workdir(tmp_path: Path) -> None:
    run = _run(["--seed=1", "--log=x.jsonl", f"--workdir={tmp_path / 'absent'}"], tmp_path)
    assert run.returncode == 2 and "not a directory" in run.stderr
    assert not (tmp_path / "x.jsonl").exists()
