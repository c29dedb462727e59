"""flux-accounting's fair-share factors: the ``fairshare`` memo ``mf_priority.so`` posts on each
job, and its associations as ``flux jobtap query mf_priority.so`` lists them."""

from __future__ import annotations

from typing import Any

from rush.errors import RJMSError
from rush.rjms.flux.job_states import STATE_SCHED

# flux-accounting's multi-factor priority plugin and the memo it posts on each job.
MF_PRIORITY = "mf_priority.so"
FAIRSHARE_FIX = (
    "load flux-accounting's mf_priority.so (flux jobtap load mf_priority.so, then flux "
    "account-priority-update) and give the job's user an association (flux account add-user), "
    'or set site.fairshare = "none"'
)


def checked_fairshare(job_id: int, value: object, source: str) -> float:
    """A fair-share factor from flux-accounting, checked: a finite number in [0, 1];
    anything else an RJMSError naming the job and where it was read (the cycle acts on nothing)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 1.0:
        raise RJMSError(
            f"job {job_id}: fair-share factor {value!r} is not a number in [0, 1]",
            where=source,
            fix=FAIRSHARE_FIX,
        )
    return float(value)


def memo_fairshare(j: dict[str, Any]) -> float | None:
    """A pending job's fair-share factor from job-list (``annotations.user.fairshare``, the memo
    ``mf_priority.so`` posts when it computes the job's priority). None while the job waits for
    its first priority (DEPEND/PRIORITY: mf_priority has not seen it yet; neutral in the core).
    A job Flux schedules (SCHED) without the memo: an RJMSError (no association or no plugin)."""
    job_id = int(j["id"])
    annotations = j.get("annotations")
    user = annotations.get("user") if isinstance(annotations, dict) else None
    value = user.get("fairshare") if isinstance(user, dict) else None
    if value is None:
        if not int(j.get("state", 0)) & STATE_SCHED:
            return None
        raise RJMSError(
            f"job {job_id}: no flux-accounting fair-share factor (no 'fairshare' memo from {MF_PRIORITY})",
            where=f"job-list annotations.user.fairshare of job {job_id}",
            fix=FAIRSHARE_FIX,
        )
    return checked_fairshare(job_id, value, f"job-list annotations.user.fairshare of job {job_id}")


def association_fairshares(answer: dict[str, Any]) -> dict[tuple[int, str], float]:
    """(userid, bank) -> fair-share factor from ``flux jobtap query mf_priority.so``
    (``job-manager.jobtap`` with ``query``: ``mf_priority_map``, one entry per user with its
    banks). An answer of another shape: an RJMSError."""
    where = f"flux jobtap query {MF_PRIORITY}"
    users = answer.get("mf_priority_map")
    if not isinstance(users, list):
        raise RJMSError("the answer has no mf_priority_map list", where=where, fix=FAIRSHARE_FIX)
    out: dict[tuple[int, str], float] = {}
    for user in users:
        banks = user.get("banks") if isinstance(user, dict) else None
        userid = user.get("userid") if isinstance(user, dict) else None
        if isinstance(userid, bool) or not isinstance(userid, int) or not isinstance(banks, list):
            raise RJMSError(f"unexpected entry {str(user)[:120]}", where=where, fix=FAIRSHARE_FIX)
        for bank in banks:
            if not isinstance(bank, dict) or not isinstance(bank.get("bank_name"), str):
                raise RJMSError(f"unexpected bank of user {userid}: {str(bank)[:120]}", where=where)
            out[(userid, bank["bank_name"])] = bank.get("fairshare")  # checked per job, naming it
    return out


def association_fairshare(job_id: int, userid: int, bank: str, table: dict[tuple[int, str], float]) -> float:
    """The factor of a job's association (its userid and bank) in :func:`association_fairshares`'
    table; a missing association or a factor outside [0, 1]: an RJMSError naming the job."""
    where = f"flux jobtap query {MF_PRIORITY}: user {userid}, bank {bank or '(none)'}"
    if (userid, bank) not in table:
        raise RJMSError(f"job {job_id}: no flux-accounting association", where=where, fix=FAIRSHARE_FIX)
    return checked_fairshare(job_id, table[(userid, bank)], where)
