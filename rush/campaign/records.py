"""The campaign records (``records.jsonl``) of the variability data contract, and the noise log.

``records.jsonl``: a header object ``{"format": "rush-campaign/1", "campaign", "seed", "command",
"machine", "created", ...}`` then one object per control-job run::

    {"job_id": str, "app": str, "wtype": "compute"|"network"|"io", "nodes": [hostnames],
     "submit": float, "start": float, "end": float, "runtime": float, "state": str,
     "probe": {the nine probe features} | null, "noise": true|false|null, ...}

``noise`` is ground truth for analysis (was the noise job's interference on during the
application's run?), never a model feature. :func:`validate_record` is the contract's check;
:func:`noise_intervals` reads the noise job's log (collectors/noise.py).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, cast

from rush.errors import RushError
from rush.models.variability.dataset import FORMAT, DatasetError, parse_record

NOISE_FORMAT = "rush-noise/1"
# Largest noise log read (bytes): one line per on/off switch, a week of 10 s periods is < 10 MB.
MAX_NOISE_LOG = 64 * 2**20


class CampaignError(RushError):
    """Bad campaign input (apps, runs, output directory, RJMS) or a broken record."""


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def validate_record(obj: object, where: str = "record") -> dict[str, Any]:
    """Check one run record against the contract and return it: the dataset's check
    (:func:`rush.models.variability.dataset.parse_record`), so what a campaign writes is what
    ``rush dataset build`` reads."""
    try:
        parse_record(obj, where, 0)
    except DatasetError as exc:
        raise CampaignError(exc.message, where=exc.where, fix=exc.fix) from None
    return cast(dict[str, Any], obj)  # parse_record refused anything but a dict


def read_records(path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The header (or None) and the validated runs of a ``records.jsonl``."""
    header, runs = None, []
    with open(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as exc:
                raise CampaignError(f"not JSON: {exc}", where=f"{path}:{number}") from None
            if number == 1 and isinstance(obj, dict) and obj.get("format") == FORMAT:
                header = obj
                continue
            runs.append(validate_record(obj, where=f"{path}:{number}"))
    return header, runs


def noise_intervals(path: Path, now: float) -> tuple[dict[str, Any], list[tuple[float, float, str]]] | None:
    """The header and the ``(on, off, kind)`` intervals of a noise log; None if there is no log
    yet. An on-period without its off event (the noise job still runs, or was killed without
    logging) lasts until the log's ``end`` event, else until ``now``."""
    if not path.is_file():
        return None
    if path.stat().st_size > MAX_NOISE_LOG:
        raise CampaignError(f"noise log larger than {MAX_NOISE_LOG} bytes", where=str(path))
    header: dict[str, Any] | None = None
    intervals: list[tuple[float, float, str]] = []
    opened: tuple[float, str] | None = None
    ended: float | None = None
    for line in path.read_text(errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue  # a line cut by a killed job: the rest still labels
        if not isinstance(obj, dict):
            continue
        if obj.get("format") == NOISE_FORMAT:
            header = obj
            continue
        t, event = obj.get("t"), obj.get("event")
        if not _finite(t):
            continue
        if event == "on":
            opened = (float(t), str(obj.get("kind", "")))
        elif event == "off" and opened is not None:
            intervals.append((opened[0], float(t), opened[1]))
            opened = None
        elif event == "end":
            ended = float(t)
    if header is None:
        raise CampaignError("not a noise log (no rush-noise/1 header)", where=str(path))
    if opened is not None:
        intervals.append((opened[0], ended if ended is not None else now, opened[1]))
    return header, intervals


def noise_during(intervals: list[tuple[float, float, str]], start: float, end: float) -> bool:
    """True when interference was on at any time in ``[start, end]``."""
    return any(on < end and off > start for on, off, _ in intervals)
