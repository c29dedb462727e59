"""A campaign on this machine: the test Slurm (tests/slurm/cluster.py), node_exporter on the real
/proc and /sys scraped by Prometheus, and ``rush campaign run`` against them.

    flock /tmp/rush-cluster.lock .venv/bin/python -m tests.campaign.local [--install 22.05] \
        -- --apps halo,cg,compute,io --runs 40 --seed 1 --noise on --out runs/campaign-NAME

Everything after ``--`` goes to ``rush campaign run``; this adds ``--rjms slurm`` with the
cluster's options and ``--prometheus`` with the local Prometheus. The daemons are stopped by
their PIDs at the end (also on error or Ctrl-C). Used by tests/campaign/test_campaign_slurm.py
and for the committed campaign in runs/.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.collect.fixtures_prom import NODE_EXPORTER, PROMETHEUS, free_port, process, tools_available
from tests.slurm.cluster import INSTALLS, SlurmCluster

REPO = Path(__file__).resolve().parents[2]
RUSH = REPO / ".venv" / "bin" / "rush"


@dataclass
class LocalStack:
    cluster: SlurmCluster
    prometheus: str  # base URL, "" when Prometheus/node_exporter are not installed

    def campaign_args(self) -> list[str]:
        args = ["--rjms", "slurm"]
        options = self.cluster.options(jobcomp_file=str(self.cluster.jobcomp))
        args += [a for key, value in options.items() for a in ("--rjms-option", f"{key}={value}")]
        if self.prometheus:
            args += ["--prometheus", self.prometheus]
        return args


@contextmanager
def node_metrics(workdir: Path, node: str, interval: str = "2s") -> Iterator[str]:
    """node_exporter on the real /proc and /sys (default collectors) and Prometheus scraping it,
    the series labelled ``instance=<node>`` (the Slurm node name); yields Prometheus's URL."""
    exporter = f"127.0.0.1:{free_port()}"
    args = [NODE_EXPORTER, f"--web.listen-address={exporter}", "--web.disable-exporter-metrics"]
    with process(args, workdir / "node_exporter.log", f"http://{exporter}/metrics"):
        address = f"127.0.0.1:{free_port()}"
        config = workdir / "prometheus.yml"
        config.write_text(
            f"global:\n  scrape_interval: {interval}\n  evaluation_interval: {interval}\n"
            "scrape_configs:\n  - job_name: node\n    static_configs:\n"
            f"      - targets: ['{exporter}']\n        labels: {{instance: '{node}'}}\n"
        )
        args = [
            PROMETHEUS,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'tsdb'}",
            f"--web.listen-address={address}",
            "--storage.tsdb.retention.time=2h",
        ]
        with process(args, workdir / "prometheus.log", f"http://{address}/-/ready"):
            yield f"http://{address}"


@contextmanager
def local_stack(workdir: Path, install: str = "22.05", prometheus: bool = True) -> Iterator[LocalStack]:
    cluster = SlurmCluster(workdir / "slurm", install=INSTALLS[install])
    with ExitStack() as stack:
        try:
            cluster.start()
        finally:
            stack.callback(cluster.stop)
        url = ""
        if prometheus and tools_available():
            (workdir / "prom").mkdir()
            url = stack.enter_context(node_metrics(workdir / "prom", cluster.node))
        yield LocalStack(cluster, url)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, _, campaign = (
        (argv[: argv.index("--")], None, argv[argv.index("--") + 1 :]) if "--" in argv else (argv, None, [])
    )
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--install", default="22.05", choices=sorted(INSTALLS))
    parser.add_argument("--no-prometheus", action="store_true")
    args = parser.parse_args(ours)
    reason = INSTALLS[args.install].available()
    if reason:
        print(f"cannot start the test Slurm: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rush-campaign-") as tmp:
        with local_stack(Path(tmp), args.install, prometheus=not args.no_prometheus) as local:
            command = [str(RUSH), "campaign", "run", *campaign, *local.campaign_args()]
            print("running:", " ".join(command), file=sys.stderr, flush=True)
            return subprocess.run(command, cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main())
