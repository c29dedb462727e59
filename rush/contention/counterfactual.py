"""Counterfactual slowdowns: what a run's slowdown would have been without one cause, or started later.

The uplink and file-system loads of :meth:`rush.contention.state.Fabric.utilisation` are sums
(every job's off-leaf traffic, the noise's, every node's I/O), so a state's load splits into
three parts that can be dropped one at a time: the noise job's, the other jobs', the job's own
(:class:`Loads`). A run's slowdown is re-evaluated segment by segment (between two events of
its run: a start, an end, a change of the noise) with a part removed, at the progress the run
actually made in that segment, so that

    slowdown without X = sum over segments of (dt / S) x S_without_X / base

(equal to the run's slowdown when nothing is removed). The file system is the fourth cause:
its load is dropped from the I/O term only. What remains with every cause removed is the run's
OS jitter.

:class:`Timeline` is a sequence of such segments, either rebuilt from a finished run's jobs
(:meth:`Timeline.of_results`, for the attribution of runs with variation) or projected from the
present (:meth:`Timeline.project`: the running jobs finish their remaining work under the known
noise schedule and nobody else starts; the clairvoyant-delay oracle's view of the future).
:func:`delayed_slowdown` is a job's slowdown if started ``delay`` seconds later on the same
nodes, on such a timeline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rush.contention.noise import NoiseSchedule
from rush.contention.state import Fabric, Running, Utilisation

CAUSES: tuple[str, ...] = ("noise", "others", "own", "io")
IDLE_TAIL = 3600.0  # s of noise-only state kept after a finished run's last job
_EPS = 1e-9


@dataclass(frozen=True)
class Loads:
    """One state's uplink and file-system load split by source (units of utilisation)."""

    noise_leaf: np.ndarray
    noise_pod: np.ndarray
    jobs_leaf: np.ndarray  # every running job's, the candidate's excluded
    jobs_pod: np.ndarray
    jobs_pfs: float

    @classmethod
    def of(cls, fabric: Fabric, running: Sequence[Running], level: float) -> Loads:
        jobs = fabric.utilisation(list(running), 0.0)
        noise = fabric.utilisation([], level)
        return cls(noise.leaf, noise.pod, jobs.leaf, jobs.pod, jobs.pfs)


def _util(leaf: np.ndarray, pod: np.ndarray, pfs: float) -> Utilisation:
    return Utilisation(leaf, pod, pfs, leaf)


def own_loads(fabric: Fabric, job: Running) -> Loads:
    """The job's own share of the load (no noise)."""
    return Loads.of(fabric, [job], 0.0)


def slowdowns_without(fabric: Fabric, job: Running, others: Loads, own: Loads) -> dict[str, float]:
    """The job's slowdown in one state, in full and with each cause removed (``all``: every one)."""

    def s(noise: bool, other: bool, mine: bool, io: bool) -> float:
        leaf = own.jobs_leaf * mine + others.jobs_leaf * other + others.noise_leaf * noise
        pod = own.jobs_pod * mine + others.jobs_pod * other + others.noise_pod * noise
        pfs = (own.jobs_pfs * mine + others.jobs_pfs * other) * io
        return fabric.slowdown(job, _util(leaf, pod, pfs))

    return {
        "full": s(True, True, True, True),
        "noise": s(False, True, True, True),
        "others": s(True, False, True, True),
        "own": s(True, True, False, True),
        "io": s(True, True, True, False),
        "all": s(False, False, False, False),
    }


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    running: tuple[Running, ...]  # every job running in it (the subject's own entry included)
    level: float


@dataclass
class Timeline:
    """Piecewise-constant states: ``segments`` in time order, contiguous."""

    fabric: Fabric
    segments: list[Segment]
    _all: dict[int, Loads] = field(default_factory=dict, repr=False)
    _own: dict[int, Loads] = field(default_factory=dict, repr=False)
    _without: dict[tuple[int, int], Loads] = field(default_factory=dict, repr=False)

    @classmethod
    def of_results(
        cls, fabric: Fabric, noise: NoiseSchedule, jobs: Sequence[tuple[Running, float, float]]
    ) -> Timeline:
        """The states of a finished run: ``jobs`` are (running, start, end); after the last end,
        an hour of the noise alone, then its last level held."""
        if not jobs:
            return cls(fabric, [])
        t0 = min(s for _, s, _ in jobs)
        t1 = max(e for _, _, e in jobs) + IDLE_TAIL
        edges = {t0, t1}
        for _, s, e in jobs:
            edges.update((s, e))
        edges.update(float(x) for x in noise.times if t0 < x < t1)
        times = sorted(edges)
        segments = []
        for a, b in zip(times[:-1], times[1:], strict=True):
            if b - a <= _EPS:
                continue
            mid = 0.5 * (a + b)
            running = tuple(r for r, s, e in jobs if s <= mid < e)
            segments.append(Segment(a, b, running, noise.level(mid)))
        segments.append(Segment(t1, math.inf, (), noise.level(t1)))
        return cls(fabric, segments)

    @classmethod
    def project(
        cls,
        fabric: Fabric,
        noise: NoiseSchedule,
        t: float,
        running: Sequence[Running],
        work_left: Sequence[float],
        horizon: float,
    ) -> Timeline:
        """The future from ``t``: the running jobs finish their unimpeded ``work_left`` under the
        noise schedule, nobody starts; segments until ``t + horizon`` (the last one open-ended
        when everything has finished)."""
        jobs = list(running)
        left = [float(w) for w in work_left]
        segments: list[Segment] = []
        end = t + horizon
        now = t
        while now < end:
            level = noise.level(now)
            state = fabric.evaluate(jobs, level) if jobs else None
            finish = (
                [now + w * state.slowdown[r.job_id] for r, w in zip(jobs, left, strict=True)] if state else []
            )
            nxt = min([noise.next_switch(now), end, *finish])
            if not jobs and nxt == end:  # idle to the end: one open segment
                segments.append(Segment(now, math.inf, (), level))
                return cls(fabric, segments)
            segments.append(Segment(now, nxt, tuple(jobs), level))
            dt = nxt - now
            if state is not None:
                left = [w - dt / state.slowdown[r.job_id] for r, w in zip(jobs, left, strict=True)]
                keep = [k for k, w in enumerate(left) if w > _EPS * 100]
                jobs = [jobs[k] for k in keep]
                left = [left[k] for k in keep]
            now = nxt
        # Beyond the horizon the last state is held.
        last = segments[-1]
        segments[-1] = Segment(last.start, math.inf, last.running, last.level)
        return cls(fabric, segments)

    def own(self, job: Running) -> Loads:
        if job.job_id not in self._own:
            self._own[job.job_id] = own_loads(self.fabric, job)
        return self._own[job.job_id]

    def loads(self, k: int, exclude: Running) -> Loads:
        """Segment k's load without the subject's own (nor any job's sharing its nodes): every
        job's load once per segment, the excluded ones subtracted (loads add up)."""
        key = (k, exclude.job_id)
        if key in self._without:
            return self._without[key]
        seg = self.segments[k]
        if k not in self._all:
            self._all[k] = Loads.of(self.fabric, seg.running, seg.level)
        out = self._all[k]
        mask = np.zeros(self.fabric.machine.nodes, dtype=bool)
        mask[exclude.nodes] = True
        for r in seg.running:
            if r.job_id == exclude.job_id or mask[r.nodes].any():
                mine = self.own(r)
                out = Loads(
                    out.noise_leaf,
                    out.noise_pod,
                    out.jobs_leaf - mine.jobs_leaf,
                    out.jobs_pod - mine.jobs_pod,
                    out.jobs_pfs - mine.jobs_pfs,
                )
        self._without[key] = out
        return out


@dataclass(frozen=True)
class Attribution:
    slowdown: float  # re-evaluated in full (equals the run's)
    without: dict[str, float]  # cause -> slowdown without it; "all" -> the jitter alone


def attribute(timeline: Timeline, job: Running, start: float, end: float, base: float) -> Attribution:
    """A finished run's slowdown with each cause removed, at the progress it actually made."""
    own = own_loads(timeline.fabric, job)
    totals = dict.fromkeys(("full", *CAUSES, "all"), 0.0)
    for k, seg in enumerate(timeline.segments):
        a, b = max(seg.start, start), min(seg.end, end)
        if b - a <= _EPS:
            continue
        s = slowdowns_without(timeline.fabric, job, timeline.loads(k, job), own)
        progress = (b - a) / s["full"]
        for key, value in s.items():
            totals[key] += progress * value
    return Attribution(totals["full"] / base, {k: totals[k] / base for k in (*CAUSES, "all")})


def delayed_slowdown(timeline: Timeline, job: Running, t: float, work: float, base: float) -> float:
    """The job's slowdown (runtime over ``base``) if it starts at ``t`` on its nodes and has
    ``work`` unimpeded seconds to do, the timeline's other jobs and noise as they are."""
    own = own_loads(timeline.fabric, job)
    left = work
    now = t
    for k, seg in enumerate(timeline.segments):
        if seg.end <= now + _EPS:
            continue
        others = timeline.loads(k, job)
        leaf = others.jobs_leaf + others.noise_leaf + own.jobs_leaf
        pod = others.jobs_pod + others.noise_pod + own.jobs_pod
        s = timeline.fabric.slowdown(job, _util(leaf, pod, others.jobs_pfs + own.jobs_pfs))
        a = max(seg.start, now)
        if (seg.end - a) / s >= left:
            return (a + left * s - t) / base
        left -= (seg.end - a) / s
        now = seg.end
    return math.inf  # unreachable: the last segment is open-ended
