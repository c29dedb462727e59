"""Slurm's SiteFactor as rush writes and reads it.

The values themselves (one integer per pending job whose order is the core's order, in
[1, 3 * 2**29]) are computed by :mod:`rush.core.priority_values`. This module holds what
the Slurm backends do with them: the accepted range, the ``nice`` lever's sign, the offset
slurmrestd wants, and reading the applied factors back from ``sprio``.
"""

from __future__ import annotations

from rush.errors import RJMSError

# Slurm stores SiteFactor and nice shifted by NICE_OFFSET; scontrol and pyslurm add it,
# slurmrestd (v0.0.41+) takes the stored value, so rush adds it there.
NICE_OFFSET = 2**31
# Slurm's own nice bound is NICE_OFFSET - 3.
NICE_LIMIT = NICE_OFFSET - 3


def checked(site_factor: int, lever: str = "site_factor") -> int:
    """The value if the lever can carry it (a 32-bit integer; ``nice``: Slurm's nice range)."""
    limit = NICE_LIMIT if lever == "nice" else NICE_OFFSET
    if isinstance(site_factor, bool) or not isinstance(site_factor, int) or not -limit < site_factor < limit:
        raise RJMSError(
            f"invalid site factor {site_factor!r}", where="set_priority", fix="an integer in 32-bit range"
        )
    return site_factor


def as_nice(site_factor: int) -> int:
    """The ``nice`` lever: a lower nice is a higher priority (negative needs an admin)."""
    return -site_factor


def rest_raw(site_factor: int) -> int:
    """The value slurmrestd's job update takes (stored raw: every client adds NICE_OFFSET)."""
    return site_factor + NICE_OFFSET


def parse_sprio(text: str) -> dict[int, int]:
    """Job id -> site factor from ``sprio -h -o '%i %S'`` (lines it cannot read are left out)."""
    factors = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1].lstrip("-").isdigit():
            factors[int(parts[0])] = int(parts[1])
    return factors
