"""One live start-estimate replay on a throw-away test cluster (see README.md).

    python sim/start_estimates/run_live.py slurm HPC2N-2002-2.2-cln.swf.gz 144960:80 10 limits
    python sim/start_estimates/run_live.py slurm-nodes HPC2N-2002-2.2-cln.swf.gz 144960:80 10 limits
    python sim/start_estimates/run_live.py flux HPC2N-2002-2.2-cln.swf.gz 144960:80 10 model
    python sim/start_estimates/run_live.py fluxion HPC2N-2002-2.2-cln.swf.gz 144960:80 10 model
    python sim/start_estimates/run_live.py fluxion-nodes SDSC-SP2-1998-4.2-cln.swf.gz 10800:80 10 \
        runtime-quantiles [MODEL]     # flux-nodes, flux-rush-nodes likewise; MODEL reused if present

Starts the tests' localhost Slurm 22.05 (64 CPUs, tests/slurm/cluster.py; bf_resolution
scaled like the jobs, max(1, 60/K) s) or a one-broker
Flux (64 cores, rush's jobtap priority plugin, sched-backfill as its scheduler; ``fluxion``:
Fluxion's sched-fluxion-resource + sched-fluxion-qmanager in its place, queue-policy=easy,
match-policy=first, its default; ``fluxion-conservative``: queue-policy=conservative; ``flux-nodes``,
``fluxion-nodes``: the same on 32 brokers of one core, Fluxion with match-policy=lonodex;
``flux-rush-nodes``: rush's scheduler module as the scheduler, ``rush replay --mode scheduler``,
its t_estimate being rush's estimate), writes a
rush.toml (FCFS, EASY; ``model``: the rule classifier models.small_below with policy.divider, so
running predicted-small jobs end at the divider in rush's estimates; ``limits``: none;
``easy++``, ``gaussier``: policy.runtime_prediction = that predictor, learning from the window's
own completions only; ``easy++-history``, ``gaussier-history``: the same, its history first
filled with each user's last jobs that finished before the window's first submit, from the
trace, scaled like the window: what a site's accounting holds when rush starts;
``runtime-quantiles``: rush's quantile model, trained first on the jobs finished before the
window, times divided by K: ``rush train runtime-quantiles --before job:START --time-scale K``), runs

    rush replay TRACE --window W --speedup K --config rush.toml --estimates OUT.csv --out OUT.json

and stops the cluster. Outputs go to sim/start_estimates/results/<rjms>-<trace>-<window>-K<k>-<variant>.*
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from rush.studies.script_args import run_main

ROOT = Path(__file__).resolve().parents[2]
KINDS = (
    "slurm", "slurm-nodes", "flux", "fluxion", "fluxion-conservative",
    "flux-nodes", "fluxion-nodes", "flux-rush-nodes",
)  # fmt: skip
# "-nodes" on Flux: 32 brokers of one core each (fake nodes through resource.config, the
# layout of slurm-nodes), Fluxion with match-policy lonodex (whole nodes, lowest ids first);
# "flux-rush-nodes": rush's Flux scheduler module is the scheduler (rush replay --mode
# scheduler), so the instance's t_estimate is rush's own estimate.
NODES = 32
PREDICTORS = ("easy++", "gaussier")
# "runtime-quantiles": rush's quantile model, trained for the run on the jobs finished before the
# window's first submit, its times divided by K (rush train runtime-quantiles --before job:START
# --time-scale K), so the live predictor runs it unchanged in the replay's seconds.
QUANTILES = "runtime-quantiles"
VARIANTS = ("limits", "model", *PREDICTORS, *(f"{name}-history" for name in PREDICTORS), QUANTILES)
sys.path.insert(0, str(ROOT))

from tests.core.real_traces import MIRROR, TRACES  # noqa: E402

# The rule classifier of the "model" runs, in trace seconds (divided by K in rush.toml, which
# is in wall seconds of the scaled replay): jobs that request at most an hour are predicted
# small and expected to end by half an hour (at K = 10: small_below 360, divider 180).
SMALL_BELOW, DIVIDER = 3600.0, 1800.0


def trace_path(trace: str) -> Path:
    """A catalogue name of tests/core/real_traces.py or a file name in the trace mirror."""
    return MIRROR / TRACES.get(trace, trace)


def slurm_cluster(workdir: Path, speedup: float, nodes: bool):
    """The tests' Slurm with its backfill plan's resolution scaled like the jobs: a site's
    default bf_resolution=60 s is 60*K trace seconds on a replay sped up K times.
    ``nodes``: Slurm 25.11 with 32 one-CPU nodes (tests/slurm/test_replay_fidelity.py's
    layout), else 22.05's one node of 64 CPUs, where Slurm's backfill plans whole nodes."""
    from tests.slurm.cluster import VENDORED, NodeLayout, SlurmCluster

    resolution = max(1, round(60 / speedup))

    class ScaledSlurm(SlurmCluster):
        def _write_config(self) -> None:
            super()._write_config()
            text = self.conf.read_text().replace(
                "bf_interval=1,", f"bf_interval=1,bf_resolution={resolution},"
            )
            self.conf.write_text(text)

    if not nodes:
        return ScaledSlurm(workdir, cpus=64)
    layout = NodeLayout(
        nodes=tuple(f"r{i}" for i in range(1, 33)),
        cpus=1,
        memory_mb=256,
        partitions=(("replay", "r[1-32]", True),),
        gpu_nodes=(),
        drained=(),
        switches=(("s1", "r[1-32]"),),
    )
    return ScaledSlurm(workdir, install=VENDORED, layout=layout)


def rush_toml(work: Path, backend: str, options: str, variant: str, speedup: float) -> Path:
    policy = f"divider = {DIVIDER / speedup:g}\n" if variant == "model" else ""
    if variant.removesuffix("-history") in PREDICTORS:
        policy = f'runtime_prediction = "{variant.removesuffix("-history")}"\n'
    models = f"\n[models]\nsmall_below = {SMALL_BELOW / speedup:g}\n" if variant == "model" else ""
    if variant == QUANTILES:
        policy = f'runtime_prediction = "{QUANTILES}"\n'
        models = f'\n[models]\nruntime_quantiles = "{work / "quantiles.joblib"}"\n'

    path = work / "rush.toml"
    path.write_text(
        f'[daemon]\ncycle_interval = 1\njournal = "{work / "journal.sqlite"}"\ndry_run = false\n\n'
        f'[policy]\npolicy = "FCFS"\nbackfill = "easy"\nthreshold = "none"\nwait_quantum = 0\n{policy}{models}\n'
        f'[rjms]\nbackend = "{backend}"\n\n[rjms.options]\n{options}'
    )
    return path


def seed_history(journal: Path, trace: str, window: str, speedup: float, one_user: bool = False) -> int:
    """Each user's last jobs finished before the window's first submit (no later data), into
    the journal's runtime history, scaled by K and ending before now in their order; the
    users keyed as the replay tags them (rush.studies.replay.replay_comment). ``one_user``
    (Slurm, where the replay's jobs carry no user tag): all of them as the replay's account."""
    import time

    from rush.planner.journal import Journal
    from rush.planner.runtime_prediction import Finished, RuntimeHistoryStore, own_accounts
    from rush.planner.snapshot_builder import user_id
    from rush.studies.replay_window import Window
    from rush.workload.catalogue import load_trace
    from rush.workload.model import workload_from_trace

    w = workload_from_trace(load_trace(str(trace_path(trace))))
    first = float(w.submit[Window.parse(window).start])
    end = w.submit + np.maximum(np.asarray(w.extra["wait"], dtype=float), 0.0) + w.runtime
    before = np.flatnonzero((end <= first) & (w.user >= 0) & np.isfinite(w.runtime))
    now = time.time()
    account = min(own_accounts(), key=lambda name: name.isdigit())  # the name (Slurm reports names)
    rows = [
        Finished(
            -1 - int(k),
            user_id(account if one_user else f"trace-{int(w.user[k])}"),
            now - (first - float(w.submit[k])) / speedup,
            int(w.procs[k]),
            float(w.requested_time[k]) / speedup,
            float(w.runtime[k]) / speedup,
            now - (first - float(end[k])) / speedup,
        )
        for k in before[np.argsort(end[before], kind="stable")]
    ]
    j = Journal(journal)
    store = RuntimeHistoryStore(j.db)  # its table is created outside the transaction
    with j.transaction():
        store.add(rows)
    return len(rows)


def train_quantiles(trace: str, window: str, speedup: str, out: Path) -> bool:
    """rush's quantile model for the run: only the jobs finished by the window's first submit,
    times divided by K. An existing ``out`` is reused (the same command makes the same model:
    its card records the cut and the scale, and the live code checks the card)."""
    if out.exists():
        print(f"quantile model: reusing {out}")
        return True
    start = window.partition(":")[0]
    train = [sys.executable, "-m", "rush", "train", QUANTILES, str(trace_path(trace))]
    train += ["--out", str(out), "--before", f"job:{start}", "--time-scale", speedup, "--no-job-fields"]
    return subprocess.run(train, cwd=ROOT).returncode == 0


def flux_run(rjms: str, work: Path, argv: list[str], variant: str, speedup: float) -> int:
    """One replay on a throw-away Flux instance: rush's daemon in priority mode beside
    sched-backfill or Fluxion, or (flux-rush-nodes) rush's module as the scheduler."""
    from tests.flux import fluxion, plugin_build
    from tests.flux.instance import FluxInstance

    why = fluxion.unavailable() if rjms.startswith("fluxion") else None
    if why:
        print(f"cannot run Fluxion: {why}", file=sys.stderr)
        return 2
    module = rjms == "flux-rush-nodes"
    config = ""
    if not module:
        plugin, why = plugin_build.build(work / "jobtap")
        if plugin is None:
            print(f"cannot build rush's jobtap plugin: {why}", file=sys.stderr)
            return 2
        config = plugin_build.jobtap_config(plugin)
    size, cores = (NODES, 1) if rjms.endswith("-nodes") else (1, 64)
    instance = FluxInstance(work / "flux", size=size, cores=cores, config=config)
    instance.start(timeout=600)
    try:
        if rjms.startswith("fluxion"):
            # Fluxion annotates t_estimate on the jobs it reserves: under easy the head of
            # the queue, under conservative every pending job.
            policy = "conservative" if rjms == "fluxion-conservative" else "easy"
            fluxion.use_fluxion(
                instance, queue_policy=policy, match_policy="lonodex" if size > 1 else "first"
            )
        elif not module:
            instance.use_scheduler("sched-backfill")
        options = f'uri = "{instance.uri}"\n' + ("" if module else 'priority_lever = "plugin"\n')
        config_path = rush_toml(work, "flux", options, variant, speedup)
        mode = ["--mode", "scheduler"] if module else []
        run = subprocess.run(
            [*argv, "--rjms", "flux", "--config", str(config_path), *mode], cwd=ROOT, env=instance.env()
        )
    finally:
        instance.stop()
    return run.returncode


def main(rjms: str, trace: str, window: str, speedup: str, variant: str, model: str = "") -> int:
    if rjms not in KINDS or variant not in VARIANTS:
        print(
            f"unknown cluster kind {rjms!r} or variant {variant!r}: kinds {', '.join(KINDS)}; "
            f"variants {', '.join(VARIANTS)}",
            file=sys.stderr,
        )
        return 2
    out_dir = ROOT / "sim" / "start_estimates" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"{rjms}-{trace.split('-')[0]}-{window.replace(':', '_')}-K{speedup}-{variant}"
    work = Path(tempfile.mkdtemp(prefix=f"rush-estimates-{rjms}-"))
    if variant.endswith("-history"):
        one_user = rjms.startswith("slurm")
        seeded = seed_history(work / "journal.sqlite", trace, window, float(speedup), one_user)
        print(f"runtime history: {seeded} jobs" + (" (one user: the replay's account)" if one_user else ""))
    if variant == QUANTILES:
        if not train_quantiles(trace, window, speedup, Path(model) if model else work / "quantiles.joblib"):
            return 2
        if model:  # the model and its card, where rush.toml names them
            for suffix in ("", ".json"):
                shutil.copyfile(f"{model}{suffix}", work / f"quantiles.joblib{suffix}")
    argv = [sys.executable, "-m", "rush", "replay", str(trace_path(trace)), "--window", window]
    argv += ["--speedup", speedup, "--timeout", "1200", "--estimates", f"{stem}.csv", "--out", f"{stem}.json"]
    if rjms in ("slurm", "slurm-nodes"):
        cluster = slurm_cluster(work / "slurm", float(speedup), nodes=rjms == "slurm-nodes")
        try:  # a start that fails half way (a port taken by another cluster) is stopped too
            cluster.start()
            options = f'slurm_conf = "{cluster.conf}"\nbin_dir = "{cluster.bin}"\n'
            config = rush_toml(work, "slurm", options, variant, float(speedup))
            run = subprocess.run(
                [*argv, "--rjms", "slurm", "--config", str(config)], cwd=ROOT, env=cluster.env
            )
        finally:
            cluster.stop()
    else:
        return flux_run(rjms, work, argv, variant, float(speedup))
    return run.returncode


if __name__ == "__main__":
    # An optional sixth argument: a quantile model file to reuse, or to train into once
    # (runtime-quantiles runs of the same trace, window and K share it).
    sys.exit(run_main(main, description=__doc__.splitlines()[0]))
