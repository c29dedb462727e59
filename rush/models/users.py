"""One mapping from a user, as the source gives it, to the models' integer user key.

The per-user history features only work if a job's user has the same key when the model is
trained and when the daemon predicts. Sources name users differently:

* Slurm (``squeue``/slurmrestd live, ``sacct`` dumps offline) gives the user *name*:
  key = ``crc32(name) & 0x7FFFFFFF`` (:func:`user_key`), kind ``"name"``;
* an SWF trace gives anonymised numbers (1, 2, 3...) with no names: key = that number, kind
  ``"trace-id"``. These can never match live names.

The model card records the kind (``user_key_kind``). The daemon sees names, with one exception:
a replay of an SWF trace submits every job as rush's own account and tags it with the trace's
user, ``user=trace-N`` (:func:`rush.studies.replay.replay_comment`). On a ``"trace-id"`` model
such a job is keyed N, the number its user's trained history is keyed by
(:func:`replay_user_key`, the one rule every shell and both live predictors use); a malformed
tag (``trace-``, ``trace-x``, a negative or huge N) is the unknown user. Every other live job on a
``"trace-id"`` model is keyed by its name, which cannot match the trained history: its history
fills from completions, and the predictors say so at load (:func:`unmatched_users_note`).
"""

from __future__ import annotations

import zlib

import numpy as np

NAME, TRACE_ID = "name", "trace-id"
USER_KEY_KINDS = (NAME, TRACE_ID)
UNKNOWN_USER = -1
# A replayed job's user tag: the prefix, then the trace's user number (rush.studies.replay).
REPLAY_USER_PREFIX = "trace-"
# The largest trace user number a replay tag may carry (the keys' range; SWF numbers are small).
MAX_TRACE_USER = 2**31 - 1


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


def replay_user_key(tag: str, kind: str) -> int | None:
    """The key of a replayed job's ``trace-N`` user tag on a model of this ``user_key_kind``.

    None when the rule does not apply (a name-keyed model, or a tag that is not a replay's):
    the caller keys the job by name. On a ``"trace-id"`` model, N as the trace wrote it (plain
    ASCII digits, no sign, no leading zero, at most :data:`MAX_TRACE_USER`), else
    :data:`UNKNOWN_USER`: a malformed tag never borrows another user's history.
    """
    if kind != TRACE_ID or not tag.startswith(REPLAY_USER_PREFIX):
        return None
    digits = tag[len(REPLAY_USER_PREFIX) :]
    canonical = digits.isascii() and digits.isdigit() and (digits == "0" or not digits.startswith("0"))
    if not canonical or len(digits) > len(str(MAX_TRACE_USER)) or int(digits) > MAX_TRACE_USER:
        return UNKNOWN_USER
    return int(digits)


def unmatched_users_note(kind: str) -> str | None:
    """What a live predictor logs at load for a model whose users live names cannot match."""
    if kind == NAME:
        return None
    return (
        f"the model was trained on {kind} users (an SWF trace's numbers), which live user names "
        "cannot match: a job's per-user history starts empty and fills from completions (train on "
        f"sacct output to start with it); only a replayed job tagged user={REPLAY_USER_PREFIX}N "
        "(submitted by rush's own account) is keyed N and meets its trained history"
    )
