"""Node-level fields of Slurm accounting: nodes, GPUs, exclusivity (issue 20 §1).

From ``sacct --parsable2``: ``NNodes`` (allocated nodes of a started job, requested ones of a
pending job), else ``AllocNodes``, else the ``node=`` count of ``AllocTRES``; GPUs are the
``gres/gpu=N`` count of ``AllocTRES``, else of ``ReqTRES`` (``gres/gpu:TYPE=N`` entries are
summed when the untyped total is absent: Slurm lists both); exclusivity is ``--exclusive`` in
``SubmitLine`` (Slurm 22.05 and 25.11 accounting keep no exclusivity field: ``sacct
--helpformat`` has no Exclusive/Shared and the job record has none; ``-x`` is ``--exclude``).
From ``sacct --json``: ``tres.allocated``/``tres.requested`` entries ``{type: "node"|"gres",
name: "gpu"|"gpu:TYPE", count}``, ``allocation_nodes`` and ``submit_line``.

A malformed count (``gres/gpu=two``, a negative ``NNodes``) is a
:class:`~rush.errors.TraceFormatError` at ``file:line`` (``file: jobs[k]`` for JSON).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

# Largest node or GPU count accepted: far beyond any machine, and an int64 either way.
MAX_COUNT = 2**31 - 1
_EXCLUSIVE = re.compile(r"(?:^|\s)--exclusive(?:[=\s]|$)")


def _count(text: str, what: str) -> int:
    """A non-negative integer count, else ValueError naming ``what``."""
    text = text.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= 10 and int(text) <= MAX_COUNT):
        raise ValueError(f"{what} = {text[:40]!r} is not a count from 0 to {MAX_COUNT}")
    return int(text)


def tres_counts(text: str, what: str) -> dict[str, int]:
    """``billing=8,cpu=8,gres/gpu=2,mem=8G,node=2`` -> the ``node`` and ``gres/gpu...`` counts."""
    counts: dict[str, int] = {}
    for item in (text or "").split(","):
        key, sep, value = item.strip().partition("=")
        if not item.strip():
            continue
        if not sep:
            raise ValueError(f"{what} entry {item[:40]!r} is not key=value")
        if key == "node" or key.startswith("gres/gpu"):
            counts[key] = _count(value, f"{what} {key}")
    return counts


def gpus_of(counts: dict[str, int]) -> int | None:
    """The job's GPUs: the untyped ``gres/gpu`` total, else the sum of the typed ones."""
    if "gres/gpu" in counts:
        return counts["gres/gpu"]
    typed = [v for k, v in counts.items() if k.startswith("gres/gpu:")]
    return sum(typed) if typed else None


def is_exclusive(submit_line: str | None) -> bool:
    return bool(submit_line) and _EXCLUSIVE.search(str(submit_line)) is not None


def parsable_node_fields(rec: dict[str, str]) -> dict[str, Any]:
    """nodes, gpus, exclusive of one ``--parsable2`` record (ValueError on a malformed value)."""
    alloc = tres_counts(rec.get("AllocTRES", ""), "AllocTRES")
    req = tres_counts(rec.get("ReqTRES", ""), "ReqTRES")
    nodes = None
    for key in ("NNodes", "AllocNodes"):
        if (rec.get(key) or "").strip():
            nodes = _count(rec[key], key) or None  # 0: not allocated (pending), try the next
            if nodes:
                break
    if nodes is None:
        nodes = alloc.get("node") or req.get("node")
    gpus = gpus_of(alloc)
    return {
        "nodes": nodes,
        "gpus": gpus if gpus is not None else gpus_of(req),
        "exclusive": is_exclusive(rec.get("SubmitLine")),
    }


def _json_tres(entries: Any, what: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in entries or []:
        if not isinstance(e, dict):
            continue
        kind, name = e.get("type"), str(e.get("name") or "")
        key = (
            "node"
            if kind == "node"
            else f"gres/{name}"
            if kind == "gres" and name.startswith("gpu")
            else None
        )
        if key is not None:
            value = e.get("count")
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
                raise ValueError(f"{what} {key} count = {value!r} is not a count from 0 to {MAX_COUNT}")
            counts[key] = value
    return counts


def json_node_fields(job: dict) -> dict[str, Any]:
    """nodes, gpus, exclusive of one ``--json`` job (ValueError on a malformed value)."""
    tres = job.get("tres") or {}
    alloc = _json_tres(tres.get("allocated"), "tres.allocated")
    req = _json_tres(tres.get("requested"), "tres.requested")
    nodes = alloc.get("node") or req.get("node")
    if not nodes and job.get("allocation_nodes") not in (None, 0):
        nodes = _count(str(job["allocation_nodes"]), "allocation_nodes")
    gpus = gpus_of(alloc)
    return {
        "nodes": nodes or None,
        "gpus": gpus if gpus is not None else gpus_of(req),
        "exclusive": is_exclusive(job.get("submit_line")),
    }


def node_columns(rows: list[dict], partition: np.ndarray) -> dict[str, np.ndarray]:
    """``Trace.node_columns`` of sacct rows (in trace order); ``partition`` is the coded partition.

    A job with a node count asks for that many nodes with ``ceil(cpus / nodes)`` cores and
    ``ceil(gpus / nodes)`` GPUs each; a job without one is cores only (nodes 0, its cpus, its
    GPUs in all).
    """
    n = len(rows)
    cpus = np.array([r["alloc_cpus"] or r["req_cpus"] or 0 for r in rows], dtype=np.int64).reshape(n)
    nodes = np.array([r.get("nodes") or 0 for r in rows], dtype=np.int64).reshape(n)
    gpus = np.array([r.get("gpus") or 0 for r in rows], dtype=np.int64).reshape(n)
    per = np.maximum(nodes, 1)
    return {
        "nodes": nodes,
        "cores_per_node": -(-cpus // per),
        "gpus_per_node": -(-gpus // per),
        "exclusive": np.array([bool(r.get("exclusive")) for r in rows], dtype=np.bool_).reshape(n),
        "partition": partition,
    }
