"""Run the rush command line in a subprocess (shared by the CLI tests of several packages)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.workload.helpers import MIRROR


def rush(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "RUSH_TRACE_MIRROR": str(MIRROR), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "rush", *args], capture_output=True, text=True, env=full_env, timeout=300
    )
