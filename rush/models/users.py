"""One mapping from a user, as the source gives it, to the models' integer user key.

The per-user history features only work if a job's user has the same key when the model is
trained and when the daemon predicts. Sources name users differently:

* Slurm (``squeue``/slurmrestd live, ``sacct`` dumps offline) gives the user *name*:
  key = ``crc32(name) & 0x7FFFFFFF`` (:func:`user_key`), kind ``"name"``;
* an SWF trace gives anonymised numbers (1, 2, 3...) with no names: key = that number, kind
  ``"trace-id"``. These can never match live names.

The model card records the kind (``user_key_kind``). The daemon only ever sees names, so a
model whose kind is ``"trace-id"`` starts its live history empty (and logs that) instead of
silently looking up trace ids under name keys.
"""

from __future__ import annotations

import zlib

import numpy as np

NAME, TRACE_ID = "name", "trace-id"
USER_KEY_KINDS = (NAME, TRACE_ID)
UNKNOWN_USER = -1


def user_key(name: str) -> int:
    """The key of a user name (Slurm's, live or from sacct): stable across runs and hosts."""
    return zlib.crc32(name.encode("utf-8", "surrogatepass")) & 0x7FFFFFFF


def trace_user_keys(codes: np.ndarray, names: dict[int, str] | None) -> tuple[np.ndarray, str]:
    """Keys of a trace's integer user column, and their kind.

    ``names`` is ``Trace.labels["user"]`` (sacct imports keep the names): when every known
    code has a name, the keys are the names' keys (kind ``"name"``, they match live jobs);
    otherwise the trace's numbers themselves (kind ``"trace-id"``). Unknown users (-1) stay -1.
    """
    codes = np.asarray(codes, dtype=np.int64)
    known = np.unique(codes[codes >= 0])
    if names and all(int(c) in names for c in known):
        table = np.array([user_key(names[int(c)]) for c in known] or [UNKNOWN_USER], dtype=np.int64)
        at = np.minimum(np.searchsorted(known, codes), len(table) - 1)
        return np.where(codes >= 0, table[at], UNKNOWN_USER).astype(np.int64), NAME
    return codes.copy(), TRACE_ID
