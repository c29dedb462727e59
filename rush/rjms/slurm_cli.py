"""Slurm's client commands (squeue, sinfo, sprio, scontrol, scancel, sbatch) as subprocesses.

Every command is an argv list run without a shell, with a timeout and, when given, the
cluster's ``SLURM_CONF``. Failures become :class:`RJMSError` with the command and a fix.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from rush.errors import RJMSError
from rush.rjms.base import ActionResult


class SlurmCLI:
    def __init__(
        self, bin_dir: str = "/usr/bin", slurm_conf: str | None = None, timeout: float = 20.0
    ) -> None:
        self.bin_dir = Path(bin_dir)
        self.timeout = float(timeout)
        self.env: dict[str, str] | None = None
        if slurm_conf:
            self.env = {**os.environ, "SLURM_CONF": str(slurm_conf)}

    def run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [str(self.bin_dir / tool), *args]
        try:
            return subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env=self.env,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError as exc:
            raise RJMSError(
                f"{tool} not found",
                where=str(self.bin_dir),
                fix="install Slurm's client commands or set rjms.options.bin_dir",
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise RJMSError(
                f"{tool} did not answer within {self.timeout:g} s",
                where=" ".join([tool, *args[:2]]),
                fix="is slurmctld overloaded or down? rush retries next cycle",
            ) from exc

    def json(self, tool: str, *args: str) -> dict[str, Any]:
        """Run a command that prints JSON (``squeue --json``) and decode it."""
        where = " ".join([tool, *args])
        out = self.run(tool, *args)
        if out.returncode != 0:
            raise RJMSError(
                f"{tool} failed: {out.stderr.strip()[:300] or f'exit status {out.returncode}'}",
                where=where,
                fix="check that slurmctld is up (scontrol ping)",
            )
        try:
            data = json.loads(out.stdout)
        except json.JSONDecodeError as exc:
            raise RJMSError(
                f"{tool} answered with invalid JSON ({exc.msg} at {exc.pos})",
                where=where,
                fix="rush needs Slurm 22.05 or later (--json output)",
            ) from exc
        if not isinstance(data, dict):
            raise RJMSError(f"{tool} answered with JSON that is not an object", where=where)
        if errors := data.get("errors"):
            raise RJMSError(f"{tool} reported: {errors}", where=where, fix="check slurmctld (scontrol ping)")
        return data

    def action(self, tool: str, *args: str) -> ActionResult:
        """Run an acting command; its output is kept for the journal."""
        out = self.run(tool, *args)
        answer = (out.stdout + out.stderr).strip()
        return ActionResult(
            ok=out.returncode == 0, answer=answer or ("ok" if out.returncode == 0 else "failed")
        )
