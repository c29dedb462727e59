"""Per-job records of one simulated run."""

from __future__ import annotations

import csv
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from rush.errors import RushError
from rush.output_file import check_output, replace_file

JOBS_CSV_HEADER = (
    "job_id",
    "submit",
    "start",
    "end",
    "procs",
    "requested_time",
    "runtime",
    "backfilled",
    "killed",
)


@dataclass
class SimResult:
    """Arrays aligned with the simulated :class:`~rush.workload.model.Workload` (submit order).

    ``end - start`` is the time the job held its processors in its final run: the runtime,
    or the requested time when the job was killed at its walltime (``killed``).
    ``requeues`` counts false-small kills; ``wasted_area`` their lost processor-seconds.
    """

    job_id: np.ndarray
    submit: np.ndarray
    start: np.ndarray
    end: np.ndarray
    procs: np.ndarray
    requested_time: np.ndarray
    runtime: np.ndarray
    backfilled: np.ndarray  # bool
    killed: np.ndarray  # bool: killed at its walltime
    machine_procs: int
    requeues: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    wasted_area: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    skips: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # Free-form description of the run (policy, backfill, threshold, trace name, drops...).
    info: dict = field(default_factory=dict)
    # Per-job attributes for per-class breakdowns (e.g. {"class": array of 0/1}).
    attributes: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.job_id)

    @property
    def wait(self) -> np.ndarray:
        return self.start - self.submit

    @property
    def response_time(self) -> np.ndarray:
        return self.end - self.submit

    def write_jobs_csv(self, path: str | Path, time_origin: float = 0.0) -> None:
        """Write the per-job CSV (times relative to ``time_origin``), atomically.

        A failure (disk full, a directory at ``path``) leaves any previous file as it was
        and no partial file behind.
        """
        with atomic_write(path, newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(JOBS_CSV_HEADER)
            for i in range(len(self)):
                writer.writerow(
                    (
                        int(self.job_id[i]),
                        _fmt(self.submit[i] - time_origin),
                        _fmt(self.start[i] - time_origin),
                        _fmt(self.end[i] - time_origin),
                        int(self.procs[i]),
                        _fmt(self.requested_time[i]),
                        _fmt(self.runtime[i]),
                        int(bool(self.backfilled[i])),
                        int(bool(self.killed[i])),
                    )
                )


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", **open_kwargs: object) -> Iterator[IO]:
    """Open a temporary file next to ``path``; on success rename it over ``path``.

    The rename is atomic on POSIX, so readers see the old file or the complete new one,
    and an error while writing removes the temporary file and raises a :class:`RushError`
    naming ``path`` (OSError) or lets the original error through.
    """
    # Through a symlink to its target, as open() would; never over a device or FIFO, which
    # a rename would replace (e.g. /dev/null for root) instead of writing into.
    path = Path(os.path.realpath(path))
    check_output(path, RushError)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise RushError(
            f"cannot write here: {exc.strerror}", where=str(path), fix="choose a writable directory"
        ) from exc
    tmp = Path(tmp_name)
    try:
        with open(fd, mode, **open_kwargs) as fh:  # type: ignore[call-overload]
            yield fh
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        replace_file(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise RushError(
            f"cannot write the file: {exc.strerror or exc}",
            where=str(path),
            fix="check the path and free space",
        ) from exc
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))
