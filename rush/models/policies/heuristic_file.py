"""Reading a LEARNED policy's heuristic file (``--policy LEARNED:path``).

The core validates and evaluates heuristics (:mod:`rush.core.learned`) but reads no files; the
shells turn policy text into a :class:`~rush.core.policies.Policy` here, reading the file of a
LEARNED policy first.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from rush.core.learned import FIX, MAX_FILE_BYTES, Heuristic, heuristic_from_bytes
from rush.core.policies import Policy, learned_policy, parse_policy
from rush.errors import PolicyError


def read_heuristic(path: str | Path) -> Heuristic:
    """Read and validate a heuristic file (regular file, at most :data:`MAX_FILE_BYTES`)."""
    where = f"LEARNED:{path}"
    if not str(path).strip():
        raise PolicyError(
            "LEARNED needs a file", where="--policy", fix="write LEARNED:path/to/heuristic.json"
        )
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise PolicyError("not a regular file", where=where, fix=FIX)
        if info.st_size > MAX_FILE_BYTES:
            raise PolicyError(
                f"{info.st_size} bytes, over the {MAX_FILE_BYTES}-byte limit", where=where, fix=FIX
            )
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)  # one more: a file that grew after the stat is refused
    except OSError as exc:
        raise PolicyError(
            f"cannot read the heuristic: {exc.strerror or exc}",
            where=where,
            fix="give the path of a heuristic JSON file",
        ) from None
    return heuristic_from_bytes(raw, where)


def parse_policy_text(text: str) -> Policy:
    """:func:`rush.core.policies.parse_policy`, reading the file of ``LEARNED:path`` first."""
    name, _, args = text.strip().partition(":")
    if name.strip().upper() != "LEARNED":
        return parse_policy(text)
    source = args.strip()
    return learned_policy(read_heuristic(source), source=source)
