"""RFC 22 idsets (``0-3,7``): broker ranks, core and GPU ids in R and in constraints."""

from __future__ import annotations


def idset_size(idset: str) -> int:
    """Size of an RFC 22 idset such as ``0-3,7`` (brackets allowed)."""
    size = 0
    for part in idset.strip("[]").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        size += int(high) - int(low) + 1 if high else 1
    return size


# Bounds on what a jobspec or an R may name (a hostile jobspec is denied, never expanded).
MAX_IDS = 1 << 20


def idset_ids(idset: str, limit: int = MAX_IDS) -> list[int]:
    """The ids of an RFC 22 idset (``0-3,7``, brackets allowed), at most ``limit`` of them."""
    ids: list[int] = []
    for part in str(idset).strip("[]").split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        first, last = int(low), int(high) if high else int(low)
        if first < 0 or last < first or len(ids) + last - first + 1 > limit:
            raise ValueError(f"idset {idset[:80]!r}: ranges must be ascending, at most {limit} ids")
        ids.extend(range(first, last + 1))
    return ids
