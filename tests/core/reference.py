"""A deliberately plain EASY / list-scheduling oracle, written independently of the kernels.

It re-sorts and re-scans everything at every event in pure Python: slow, obviously
correct, and used only to check the compiled core job by job.
"""

from __future__ import annotations

from collections.abc import Callable


def reference_schedule(
    submit: list[float],
    runtime: list[float],
    requested: list[float],
    procs: list[int],
    machine: int,
    key: Callable[[int, float], float],
    threshold: float | None,
    backfill: bool,
) -> tuple[list[float], list[bool]]:
    n = len(submit)
    start: list[float | None] = [None] * n
    end: list[float | None] = [None] * n
    backfilled = [False] * n
    pending: list[int] = []
    running: list[int] = []
    free = machine
    nxt = 0

    def launch(j: int, t: float, by_backfill: bool) -> None:
        nonlocal free
        start[j] = t
        end[j] = t + min(runtime[j], requested[j])
        backfilled[j] = by_backfill
        free -= procs[j]
        running.append(j)

    while nxt < n or running or pending:
        times = [submit[nxt]] if nxt < n else []
        times += [end[j] for j in running]
        if not times:
            break
        t = min(times)
        for j in [j for j in running if end[j] <= t]:
            running.remove(j)
            free += procs[j]
        while nxt < n and submit[nxt] <= t:
            pending.append(nxt)
            nxt += 1

        def order(j: int, t: float = t) -> tuple:
            if threshold is not None and t - submit[j] > threshold:
                return (0, submit[j], j)
            return (1, key(j, t), j)

        pending.sort(key=order)
        head = None
        for j in list(pending):
            if procs[j] > free:
                head = j
                break
            launch(j, t, False)
            pending.remove(j)
        if head is None or not backfill:
            continue
        ends = sorted((start[j] + requested[j], procs[j]) for j in running)
        avail = free
        shadow = None
        for e, p in ends:
            avail += p
            if avail >= procs[head]:
                shadow = e
                break
        extra = free + sum(p for e, p in ends if e <= shadow) - procs[head]
        shadow = max(shadow, t)
        for j in list(pending):
            if j == head or procs[j] > free:
                continue
            if t + requested[j] <= shadow:
                launch(j, t, True)
                pending.remove(j)
            elif procs[j] <= extra:
                extra -= procs[j]
                launch(j, t, True)
                pending.remove(j)
    return start, backfilled
