"""Runtime classes: the codes the core uses and which class a job is scheduled as.

A job is *small* or *large* (``SMALL``/``LARGE``; -1: unknown). Where its class comes from
is :func:`class_by_precedence`; a job rush has requeued is large whatever a model says
(:func:`runtime_class_of`). What happens to a small job that outruns the divider is
:mod:`rush.core.false_small_kill`.
"""

from __future__ import annotations

from numba import njit

SMALL = 0
LARGE = 1


@njit(cache=True, inline="always")
def runtime_class_of(predicted_class: int, requeues: int) -> int:
    """A job rush has requeued is large whatever a model predicts for it now."""
    return LARGE if requeues > 0 else predicted_class


def class_by_precedence(requeues: int, tagged: int | None, journaled: int, predicted: int) -> tuple[int, str]:
    """A job's runtime class and where it comes from, first that applies:

    1. ``requeued``: rush already requeued it (:func:`runtime_class_of`): large;
    2. ``tag``: a class written on the job (by rush at a requeue, or by an administrator);
    3. ``journal``: the class predicted at the first pass that saw it (features are read once,
       near submission, as in the offline walk-forward), ``journaled`` >= 0;
    4. ``model``: this pass's prediction (-1: unknown).
    """
    if requeues > 0:
        return runtime_class_of(predicted, requeues), "requeued"
    if tagged is not None:
        return tagged, "tag"
    if journaled >= 0:
        return journaled, "journal"
    return predicted, "model"
