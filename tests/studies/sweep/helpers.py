"""Run rush sweep grid and write a small SWF trace, for the sweep tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rush.cli.main import main


def write_swf(path: Path) -> Path:
    """Eight processors; jobs in weeks 0 and 2, none in week 1."""
    lines = ["; MaxProcs: 8"]
    jobs = [
        (0, 100, 4),
        (50, 3000, 8),
        (60, 200, 2),
        (70, 50, 1),
        (2 * WEEK + 10, 500, 4),
        (2 * WEEK + 20, 40, 8),
    ]
    for i, (submit, runtime, procs) in enumerate(jobs, start=1):
        fields = [i, submit, -1, runtime, procs, -1, -1, procs, runtime * 2, -1, 1, 1, -1, -1, -1, -1, -1, -1]
        lines.append(" ".join(str(f) for f in fields))
    path.write_text("\n".join(lines) + "\n")
    return path


def run(
    argv: list[str], capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["rush", *argv])
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


WEEK = 7 * 86400
