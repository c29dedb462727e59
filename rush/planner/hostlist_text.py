"""Node names in hostlist form (``n[0-3,7],login``), as Slurm and Flux print them: how the
journal stores a reservation's nodes compactly (``jobs.reserved_nodes``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rush.core.kept_nodes import KeptNodes

# A name as a prefix and a decimal index at its end (``n007``: ``n``, ``007``).
_INDEXED = re.compile(r"^(.*?)(\d+)$")


def compress_hostlist(names: Iterable[str]) -> str:
    """Names -> one hostlist: names that differ only in a trailing index of one width share a
    bracket of ascending ranges; other names are listed as they are. Order: by prefix, then index."""
    groups: dict[tuple[str, int], set[int]] = {}
    plain: set[str] = set()
    for name in names:
        match = _INDEXED.match(name)
        if match is None or "[" in name or "," in name:
            plain.add(name)
            continue
        digits = match.group(2)
        # A zero-padded index keeps its width (n007); an unpadded one any width (n7, n12).
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        groups.setdefault((match.group(1), width), set()).add(int(digits))
    parts = []
    for (prefix, width), indices in sorted(groups.items()):
        ranges = _ranges(sorted(indices), width)
        if len(indices) == 1:
            parts.append(f"{prefix}{ranges}")
        else:
            parts.append(f"{prefix}[{ranges}]")
    return ",".join(parts + sorted(plain))


def _ranges(indices: list[int], width: int) -> str:
    out = []
    start = prev = indices[0]
    for i in [*indices[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        low, high = f"{start:0{width}d}", f"{prev:0{width}d}"
        out.append(low if start == prev else f"{low}-{high}")
        if i is not None:
            start = prev = i
    return ",".join(out)


def reservation_nodes(kept: KeptNodes | None) -> tuple[tuple[str, ...], dict[int, tuple[int, ...]]]:
    """The machine's node names and, per job holding a standing reservation, its nodes (indices
    into those names), from a conservative pass's record (``Decisions.kept``; None, e.g. EASY or
    processor counts: none). Cheap (~2 ms for 10 000 reservations): the daemon compares them
    every cycle and writes hostlists (:func:`compress_hostlist`) only for those that changed."""
    if kept is None:
        return (), {}
    node = kept.reserved.node.tolist()
    offset = kept.reserved.offset.tolist()
    jobs = kept.reserved_job.tolist()
    return kept.names, {job: tuple(node[offset[r] : offset[r + 1]]) for r, job in enumerate(jobs)}
