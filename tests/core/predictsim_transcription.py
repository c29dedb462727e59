"""An independent transcription of Gaussier et al.'s simulator's online predictor (predictsim:
predictor_sgdlinear.make_x, valopt's NAG.fit, CompositeLoss with the abs and square curves,
RegularizedLoss with L2), in plain Python, for tests/core/test_gaussier_online.py and the
simulator's gaussier-online tests to compare rush.core.gaussier_online with."""

from __future__ import annotations

import itertools
import math

import numpy as np

from rush.core import gaussier_online as g


class Job:
    def __init__(self, user: int, submit: float, runtime: float, procs: int, request: float) -> None:
        self.user_id, self.submit_time, self.actual_run_time = user, submit, runtime
        self.num_required_processors, self.user_estimated_run_time = procs, request
        self.start_to_run_at_time = 0.0


class Predictsim:
    """Their PredictorSgdlinear with the C-V triple's options, transcribed from their code
    (dicts, lists, Python floats), independent of rush.core.gaussier_online."""

    def __init__(self) -> None:
        self.last = {}  # user -> [last1, last2, last3] jobs (None: missing)
        self.n_jobs, self.sum_run, self.sum_cores, self.last_end = {}, {}, {}, {}
        self.job_x = {}
        dim = 3 * 19 + 2 * 171  # their n_features with quadratic: 399
        self.w, self.s, self.G = [0.0] * dim, [1e-9] * dim, [1e-9] * dim
        self.N, self.n = 1e-9, 1.0

    def make_x(self, job, now, running):
        u = job.user_id
        self.last.setdefault(u, [None, None, None])
        for d in (self.n_jobs, self.sum_run, self.sum_cores, self.last_end):
            d.setdefault(u, 0.0)
        x = [0.0] * len(self.w)
        x[0] = 1.0
        req = job.user_estimated_run_time
        for k in range(3):
            j = self.last[u][k]
            if j is not None:
                last = j.actual_run_time if j.submit_time + j.actual_run_time > now else now - j.submit_time
            else:
                last = req
            x[1 + k] = float(min(req, last))
        x[4] = float(req)
        if self.last[u][2] is not None:
            x[6] = 0.33 * (x[1] + x[2] + x[3])
            x[5] = 0.5 * (x[1] + x[2])
        elif self.last[u][1] is not None:
            x[5] = 0.5 * (x[1] + x[2])
            x[6] = x[5]
        elif self.last[u][0] is not None:
            x[5] = x[1]
            x[6] = x[5]
        else:
            x[5] = x[6] = float(req)
        x[7] = self.sum_run[u] / self.n_jobs[u] if self.n_jobs[u] != 0 else 0.0
        x[8] = now - self.last_end[u] if self.last_end[u] != 0.0 else 0.0
        x[9] = job.num_required_processors / (self.sum_cores[u] / self.n_jobs[u]) if self.n_jobs[u] else 0.0
        mine = [j for j in running if j.user_id == u]
        x[10] = float(sum(j.num_required_processors for j in mine))
        lengths = [now - j.start_to_run_at_time for j in mine]
        x[11], x[12], x[13] = float(sum(lengths)), float(len(mine)), float(max(lengths)) if lengths else 0.0
        day = 2.0 * math.pi * float(job.submit_time % (3600 * 24)) / (3600.0 * 24.0)
        week = 2.0 * math.pi * float(job.submit_time % (3600 * 24 * 7)) / (3600.0 * 24.0 * 7.0)
        x[14], x[15], x[16], x[17] = math.cos(day), math.sin(day), math.cos(week), math.sin(week)
        x[18] = float(job.num_required_processors)
        i = 19
        for a, b in itertools.combinations(x[1:17], 2):
            x[i] = a * b
            i += 1
        for k in range(1, 19):
            x[i] = x[k] * x[k]
            i += 1
        return x

    def predict(self, job, now, running) -> float:
        x = self.job_x.setdefault(job, self.make_x(job, now, running))
        p = abs(sum(a * b for a, b in zip(self.w, x, strict=True)))
        return float(min(int(max(1.0, int(p))), job.user_estimated_run_time))

    def fit(self, job, now) -> None:
        x = self.job_x.pop(job)
        u = job.user_id
        self.last[u] = [job, self.last[u][0], self.last[u][1]]
        self.n_jobs[u] += 1
        self.sum_run[u] += job.actual_run_time
        self.sum_cores[u] += job.num_required_processors
        self.last_end[u] = now
        weight = 1 + math.log(job.num_required_processors * job.actual_run_time)
        W = self.w
        for i in range(len(W)):
            if abs(x[i]) > self.s[i]:
                W[i] = W[i] * (self.s[i] / abs(x[i]))
                self.s[i] = abs(x[i])
        self.N += sum(a * a / (b * b) for a, b in zip(x, self.s, strict=True) if b != 0)
        px = sum(a * b for a, b in zip(W, x, strict=True))
        step = [0.0] * len(W)
        for i in range(len(W)):
            e = px - job.actual_run_time
            loss = weight * 2 * x[i] * e if e > 0 else (0 if e == 0 else -weight * x[i] * 1.0)
            d = loss + 4000000000 * W[i]
            self.G[i] += d * d
            step[i] = -5000.0 * d / (math.sqrt(self.N * self.G[i] / self.n) * self.s[i])
        self.w = [a + b for a, b in zip(step, W, strict=True)]
        self.n += 2


def replay(events, both):
    """Drive both implementations through (kind, job) events: 'submit' (with the running jobs)
    and 'end'; returns both prediction lists."""
    ref, ours = Predictsim(), g.new_gaussier_state(3, len(both), 2, g.CV_LOSS)
    got, want = [], []
    running = []
    for kind, k, now in events:
        job = both[k]
        if kind == "submit":
            want.append(ref.predict(job, now, running))
            mine = np.array(
                [
                    sum(j.num_required_processors for j in running if j.user_id == job.user_id),
                    sum(now - j.start_to_run_at_time for j in running if j.user_id == job.user_id),
                    sum(1 for j in running if j.user_id == job.user_id),
                    max([now - j.start_to_run_at_time for j in running if j.user_id == job.user_id] or [0.0]),
                ]
            )
            got.append(
                g.gaussier_arrival(
                    ours,
                    k,
                    job.user_id,
                    now,
                    job.user_estimated_run_time,
                    float(job.num_required_processors),
                    mine,
                )
            )
            job.start_to_run_at_time = now
            running.append(job)
        else:
            running.remove(job)
            ref.fit(job, now)
            g.gaussier_completion(
                ours,
                k,
                job.user_id,
                job.submit_time,
                job.actual_run_time,
                float(job.num_required_processors),
                now,
            )
    return got, want, ours, ref
