"""Slurm's priority factors as rush writes and reads them: SiteFactor and fair-share.

The values themselves (one integer per pending job whose order is the core's order, in
[1, 3 * 2**29]) are computed by :mod:`rush.core.priority_values`. This module holds what
the Slurm backends do with them: the accepted range, the ``nice`` lever's sign, the offset
slurmrestd wants, and reading the applied factors back from ``sprio``.

Fair-share (``site.fairshare = "rjms"``) is read from ``sshare -P -n -a -o
Account,User,Partition,FairShare``: one line per association, not per job, so 10 000
pending jobs cost one short answer, and a job rush holds (priority 0, which ``sprio`` does
not list) still has its factor. The FairShare column is the normalised factor
priority/multifactor uses for that association's jobs (classic or fair tree).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

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
        # ASCII digits of a bounded length: str.isdigit also takes "²", and int() refuses it
        # and numbers of over 4300 digits (a garbled answer must not fail the read).
        found = re.fullmatch(r"\s*([0-9]{1,19})\s+(-?[0-9]{1,19})\s*", line)
        if found:
            factors[int(found[1])] = int(found[2])
    return factors


# The sshare command rush runs for fair-share (one per cycle, only with pending jobs).
SSHARE_ARGS = ("-P", "-n", "-a", "-o", "Account,User,Partition,FairShare")
SSHARE_FIX = (
    'check slurmdbd and PriorityType=priority/multifactor (sshare -a), or set site.fairshare = "none"'
)
# (account, user, partition) -> factor; partition "" for an association of every partition.
Associations = dict[tuple[str, str, str], float]


def parse_sshare(text: str) -> Associations:
    """Users' fair-share factors from ``sshare`` (:data:`SSHARE_ARGS`), by association.

    Account lines (no user) are skipped: a job's factor is its user association's. Anything
    else that is not ``account|user|partition|factor`` with a factor in [0, 1] is an
    RJMSError naming the line: a garbled answer must not order the queue.
    """
    factors: Associations = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("|")
        if len(parts) != 4:
            raise RJMSError(
                f"unreadable sshare line {number}: {line[:200]!r} (expected account|user|partition|fairshare)",
                where="sshare " + " ".join(SSHARE_ARGS),
                fix=SSHARE_FIX,
            )
        # sshare indents accounts by their depth in the tree.
        account, user, partition, value = (p.strip() for p in parts)
        if not user:
            continue
        factors[(account, user, partition)] = _factor(value, f"account {account!r} user {user!r}")
    return factors


def _factor(text: str, whose: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # NaN fails too
        raise RJMSError(
            f"sshare gives {whose} the fair-share factor {text!r}, outside [0, 1]",
            where="sshare " + " ".join(SSHARE_ARGS),
            fix=SSHARE_FIX,
        )
    return value


def fairshare_of(job_id: int, account: str, user: str, partition: str, factors: Mapping) -> float:
    """A pending job's factor: its association in its partition, else its account/user one.
    RJMSError when sshare has neither (a job whose association is gone, or no accounting)."""
    for key in ((account, user, partition), (account, user, "")):
        if key in factors:
            return factors[key]
    raise RJMSError(
        f"job {job_id}: sshare lists no association for account {account!r} user {user!r}"
        + (f" partition {partition!r}" if partition else ""),
        where="sshare " + " ".join(SSHARE_ARGS),
        fix='was the account or user removed (sacctmgr)? Without accounting set site.fairshare = "none"',
    )
