"""Slurm's client commands (squeue, sinfo, sprio, scontrol, scancel, sbatch) as subprocesses.

Every command is an argv list run without a shell, with a timeout and, when given, the
cluster's ``SLURM_CONF``. Failures become :class:`RJMSError` with the command and a fix.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from rush.errors import RJMSError
from rush.rjms.base import ActionResult

# Largest command output accepted (rjms.options.max_answer_mb): a queue, not a disk image.
DEFAULT_MAX_OUTPUT = 512 * 2**20


class SlurmCLI:
    def __init__(
        self,
        bin_dir: str = "/usr/bin",
        slurm_conf: str | None = None,
        timeout: float = 20.0,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT,
    ) -> None:
        self.bin_dir = Path(bin_dir)
        self.timeout = float(timeout)
        self.max_output_bytes = int(max_output_bytes)
        self.env: dict[str, str] | None = None
        if slurm_conf:
            self.env = {**os.environ, "SLURM_CONF": str(slurm_conf)}

    def has(self, tool: str) -> bool:
        """Whether ``tool`` is installed where rush looks for it (a REST-only host has none)."""
        path = self.bin_dir / tool
        return path.is_file() and os.access(path, os.X_OK)

    def run(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        """Run ``tool``; its output goes to a temporary file first, so an absurdly large
        answer is refused (``rjms.options.max_answer_mb``) before it is read into memory."""
        argv = [str(self.bin_dir / tool), *args]
        where = " ".join([tool, *args[:2]])
        try:
            with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
                proc = subprocess.run(
                    argv, stdout=out, stderr=err, timeout=self.timeout, env=self.env, stdin=subprocess.DEVNULL
                )
                size = out.seek(0, os.SEEK_END)
                if size > self.max_output_bytes:
                    raise RJMSError(
                        f"{tool} printed {size / 2**20:.0f} MiB, more than the "
                        f"{self.max_output_bytes / 2**20:g} MiB rush accepts",
                        where=where,
                        fix="raise rjms.options.max_answer_mb if the queue is really this large",
                    )
                out.seek(0)
                err.seek(0)
                # Slurm prints UTF-8; a stray byte must not crash the reader.
                stdout = out.read().decode("utf-8", "replace")
                stderr = err.read(64 * 1024).decode("utf-8", "replace")
        except (FileNotFoundError, PermissionError) as exc:
            raise RJMSError(
                f"{tool} not found" if isinstance(exc, FileNotFoundError) else f"{tool} is not executable",
                where=str(self.bin_dir),
                fix="install Slurm's client commands or set rjms.options.bin_dir",
            ) from exc
        except subprocess.TimeoutExpired as exc:
            raise RJMSError(
                f"{tool} did not answer within {self.timeout:g} s",
                where=where,
                fix="is slurmctld overloaded or down? rush retries next cycle; for a large queue raise "
                "rjms.options.timeout (squeue --json of 10 000 jobs took 5-6 s on a test host)",
            ) from exc
        except OSError as exc:  # e.g. an exec format error, no space for the temporary file
            raise RJMSError(
                f"cannot run {tool}: {exc}", where=where, fix="check the Slurm installation"
            ) from exc
        return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)

    def json(self, tool: str, *args: str) -> dict[str, Any]:
        """Run a command that prints JSON (``squeue --json``) and decode it."""
        return self.decode(self.run(tool, *args), tool, *args)

    def decode(self, out: subprocess.CompletedProcess[str], tool: str, *args: str) -> dict[str, Any]:
        """The JSON object a command printed; RJMSError when it failed or printed garbage."""
        where = " ".join([tool, *args])
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
        except RecursionError as exc:
            raise RJMSError(f"{tool} answered with absurdly nested JSON", where=where) from exc
        if not isinstance(data, dict):
            raise RJMSError(f"{tool} answered with JSON that is not an object", where=where)
        if errors := data.get("errors"):
            raise RJMSError(
                f"{tool} reported: {str(errors)[:500]}", where=where, fix="check slurmctld (scontrol ping)"
            )
        return data

    def action(self, tool: str, *args: str) -> ActionResult:
        """Run an acting command; its output is kept for the journal."""
        out = self.run(tool, *args)
        answer = (out.stdout + out.stderr).strip()[:2000]
        return ActionResult(
            ok=out.returncode == 0, answer=answer or ("ok" if out.returncode == 0 else "failed")
        )
