"""``rush campaign run``: control jobs of proxy applications through the RJMS (see rush/campaign/)."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

import typer

from rush.errors import RushError

app = typer.Typer(no_args_is_help=True)


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise RushError(f"bad option {item[:80]!r}", where=flag, fix="write KEY=VALUE")
        out[key.strip()] = value
    return out


def _min_max(text: str, flag: str) -> tuple[float, float]:
    low, sep, high = text.partition(":")
    try:
        return float(low), float(high if sep else low)
    except ValueError:
        raise RushError(f"not MIN:MAX seconds: {text[:40]!r}", where=flag, fix="e.g. 20:60") from None


@app.command("run")
def run(
    apps: str = typer.Option(..., "--apps", help="Comma-separated proxy applications: halo,cg,compute,io."),
    runs: int = typer.Option(..., "--runs", help="Runs of each application (1..10000)."),
    out: Path = typer.Option(..., "--out", help="New (or empty) directory for records.jsonl and the store."),
    seed: int = typer.Option(
        0, "--seed", help="Seeds the run order, the applications and the noise schedule."
    ),
    rjms: str = typer.Option("slurm", "--rjms", help="RJMS backend name."),
    rjms_option: list[str] = typer.Option([], "--rjms-option", help="Backend option KEY=VALUE (repeatable)."),
    config: Path | None = typer.Option(None, "--config", help="Take the backend from rush.toml's [rjms]."),
    noise: str = typer.Option(
        "off", "--noise", help="on: run the noise job (collectors/noise.py) throughout."
    ),
    noise_kinds: str = typer.Option("memory,network,io", "--noise-kinds"),
    noise_on: str = typer.Option("20:60", "--noise-on", help="On-period length MIN:MAX seconds."),
    noise_off: str = typer.Option("20:60", "--noise-off", help="Off-period length MIN:MAX seconds."),
    noise_workers: int = typer.Option(1, "--noise-workers", help="Noise processes per kind."),
    ntasks: int = typer.Option(2, "--ntasks", help="MPI ranks per control job."),
    nodes: int | None = typer.Option(None, "--nodes", help="Spread the ranks over N nodes."),
    scale: float = typer.Option(1.0, "--scale", help="Work multiplier of the applications."),
    concurrency: int = typer.Option(1, "--concurrency", help="Control jobs in flight at once."),
    interval: float = typer.Option(2.0, "--interval", help="Counter sampling period (s)."),
    warmup: float = typer.Option(0.0, "--warmup", help="Seconds of counters before the first job."),
    time_limit: float = typer.Option(600.0, "--time-limit", help="Seconds per control job."),
    partition: str = typer.Option("", "--partition"),
    launcher: str = typer.Option(
        "mpirun", "--launcher", help="MPI launcher inside the jobs (words allowed)."
    ),
    python: str = typer.Option(sys.executable, "--python", help="Python with mpi4py and numpy on the nodes."),
    env: list[str] = typer.Option([], "--env", help="KEY=VALUE added to the jobs' environment (repeatable)."),
    prometheus: str = typer.Option(
        "", "--prometheus", help="Also read node_exporter series from this Prometheus."
    ),
    prometheus_host_label: str = typer.Option("instance", "--prometheus-host-label"),
    no_procfs: bool = typer.Option(False, "--no-procfs", help="Do not sample this host's procfs."),
    procfs_nodes: str = typer.Option(
        "",
        "--procfs-nodes",
        help="Node names this host's procfs stands for, e.g. node[0-3] (Flux test brokers).",
    ),
    probe_ring_bytes: str = typer.Option("4MB", "--probe-ring-bytes"),
    probe_allreduce_bytes: str = typer.Option("4MB", "--probe-allreduce-bytes"),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Run control jobs through the RJMS: the MPI probe then the application in each job, node
    counters into a feature store, records.jsonl for `rush dataset build`."""
    from rush.campaign.records import CampaignError
    from rush.campaign.runner import CampaignOptions, command_line, parse_apps, parse_nodes, run_campaign

    if noise not in ("on", "off"):
        raise CampaignError(
            f"must be on or off, got {noise[:20]!r}", where="--noise", fix="--noise on or --noise off"
        )
    from rush.rjms.base import parse_backend_options

    configured: dict[str, object] = {}
    if config is not None:
        from rush.planner.config import load_config

        section = load_config(config).rjms
        rjms, configured = section.backend, dict(section.options)
    # Typed by the backend's declared options (timeout=20 a number, fallback=false a bool).
    options_given = {**configured, **parse_backend_options(rjms, rjms_option)}
    options = CampaignOptions(
        apps=parse_apps(apps),
        runs=runs,
        out=out,
        seed=seed,
        rjms=rjms,
        rjms_options=options_given,
        noise=noise == "on",
        noise_kinds=tuple(k.strip() for k in noise_kinds.split(",") if k.strip()),
        noise_on=_min_max(noise_on, "--noise-on"),
        noise_off=_min_max(noise_off, "--noise-off"),
        noise_workers=noise_workers,
        ntasks=ntasks,
        nodes=nodes,
        scale=scale,
        launcher=launcher,
        python=python,
        env=_pairs(env, "--env"),
        time_limit=time_limit,
        partition=partition,
        concurrency=concurrency,
        interval=interval,
        warmup=warmup,
        procfs=not no_procfs,
        procfs_nodes=parse_nodes(procfs_nodes),
        prometheus=prometheus,
        prometheus_host_label=prometheus_host_label,
        probe_ring_bytes=probe_ring_bytes,
        probe_allreduce_bytes=probe_allreduce_bytes,
        command=command_line(),
    )

    def progress(info: dict) -> None:
        last = info.get("last") or {}
        typer.echo(
            f"[{info['done']}/{info['total']}] {last.get('app')} job {last.get('job_id')} "
            f"{last.get('state')} runtime {last.get('runtime', 0):.2f} s noise={last.get('noise')}",
            err=True,
        )

    def interrupted(signum: int, _frame: object) -> None:
        # SIGTERM as Ctrl-C: the runner's clean-up cancels the jobs in flight and the noise job.
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    summary = run_campaign(options, progress)
    if as_json:
        typer.echo(json.dumps(summary, indent=1, sort_keys=True))
        return
    typer.echo(f"{summary['runs']} runs ({summary['completed']} completed) in {summary['wall_s']} s")
    typer.echo(f"records: {summary['records']}\nstore:   {summary['store']}")
    for name, row in summary["apps"].items():
        mean = row["runtime_mean"]
        typer.echo(
            f"  {name:8s} {row['wtype']:8s} runs {row['runs']:4d}  mean "
            + (f"{mean:.3f} s" if mean is not None else "-")
            + f"  with noise {row['runs_with_noise']}"
        )
    if summary["absent_counters"]:
        typer.echo("absent counters: " + ", ".join(summary["absent_counters"]))
