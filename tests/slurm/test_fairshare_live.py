"""rush beside Slurm's fair-share, on a real Slurm with slurmdbd and MariaDB: Debian's 22.05 (one
node) and the vendored 25.11 (two nodes; tests/slurm/accounting_cluster.py), each test on both.

Two accounts of equal shares; ``acct_a`` gets usage from a real job (which then keeps the
node busy), so its user's fair-share factor drops below ``acct_b``'s. Three jobs then wait:
A5 (acct_a, 5 min), B9 (acct_b, 9 min), B5 (acct_b, 5 min), submitted in that order. Slurm
weighs fair-share only (PriorityWeightFairshare = 100 000, tests/slurm/accounting_cluster.py).
Each rush run is one ``rush daemon --once --apply`` cycle with a fresh journal:

(a) Slurm alone: both acct_b jobs above A5, B5 and B9 tied (same factor);
(b) SPF with ``priority_weight = 10 000``: rush's SiteFactor (A5 = B5 > B9) breaks the tie
    inside acct_b (B5 above B9), while fair-share decides between the equal A5 and B5 and
    still puts B9 above A5;
(c) SPF on the full range: rush's order overrides fair-share (A5 above B9, which fair-share
    put first), the documented danger;
(d) ``LINEAR:r=1,fairshare=-1e6`` with ``site.fairshare = "rjms"``: rush reads the factors
    (sshare) and orders both acct_b jobs first by its own policy; the journal shows the factor
    read (its queue table) and the LINEAR key it made (the priority reason);
(e) slurmdbd unreachable (stopped, last): slurmctld answers sshare from its association
    cache, so rush reads the same factors and its cycle succeeds.

Each install's tests are one xdist group (tests/xdist_groups.py, ``SPLIT_BY_PARAM``): its cluster
starts once, on one worker; the two clusters may run side by side (their own ports, munge,
MariaDB datadir and socket). An install skips with the reason when slurmdbd, MariaDB or its
``accounting_storage/mysql`` plugin is missing.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.polling import wait_for
from tests.slurm.accounting_cluster import FAIRSHARE_WEIGHT, AccountingCluster, accounting_available
from tests.slurm.cluster import INSTALLS

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[2]
# rush's priority_weight in (b) and (d): below the fair-share gap (PriorityWeightFairshare
# times the factors' difference, about 66 000 here), large enough that SPF's keys 300 s and
# 540 s stay apart once scaled (a factor 2 in a key is priority_weight / 1536 units).
WEIGHT = 10_000


@pytest.fixture(scope="module", params=["22.05", "25.11"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AccountingCluster]:
    install = INSTALLS[request.param]
    reason = accounting_available(install)
    if reason:
        pytest.skip(reason)
    cluster = AccountingCluster(tmp_path_factory.mktemp("slurm-accounting"), cpus=4, install=install)
    try:
        cluster.start()
    except Exception as exc:  # stop what did start; the message carries the daemons' logs
        cluster.stop()
        pytest.fail(
            f"could not start the accounting Slurm {install.name}: {exc} {cluster.log_tail('slurmdbd')}"
        )
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def queue(cluster: AccountingCluster) -> dict[str, int]:
    """acct_a's usage (a job filling the node, kept running), then the three waiting jobs."""
    cluster.submit("-A", "acct_a", "-n", "4", "-t", "10", "--wrap", "sleep 600")

    def factors_apart() -> bool:
        # Slurm charges a running job's usage at its decay pass (PriorityCalcPeriod, a minute).
        shares = cluster.shares()
        return (
            shares[("acct_a", "root")][0] > 0
            and shares[("acct_a", "root")][1] < shares[("acct_b", "root")][1]
        )

    wait_for(factors_apart, timeout=150, step=1.0)
    jobs = {}
    for name, account, minutes in (("A5", "acct_a", 5), ("B9", "acct_b", 9), ("B5", "acct_b", 5)):
        jobs[name] = cluster.submit(
            "-A", account, "-n", "4", "-t", str(minutes), "-J", name, "--wrap", "true"
        )
    return jobs


def priorities(cluster: AccountingCluster, jobs: dict[str, int]) -> dict[str, int]:
    listed = cluster.sprio()
    return {name: listed[job_id][0] for name, job_id in jobs.items()}


def rush_once(cluster: AccountingCluster, tmp_path: Path, name: str, policy: str, site: str) -> Path:
    """One ``rush daemon --once --apply`` cycle against the cluster; returns its journal."""
    journal = tmp_path / f"{name}.sqlite"
    config = tmp_path / f"{name}.toml"
    # site.fairshare = "rjms" alone switches the backend's read on (the planner sets its option).
    options = {**cluster.options(), "priority_lever": "site_factor"}
    config.write_text(
        f'[daemon]\njournal = "{journal}"\n\n[policy]\npolicy = "{policy}"\n\n[site]\n{site}\n\n'
        '[rjms]\nbackend = "slurm"\n[rjms.options]\n'
        + "".join(f"{key} = {json.dumps(value)}\n" for key, value in options.items())
    )
    out = subprocess.run(
        [sys.executable, "-m", "rush", "daemon", "--config", str(config), "--once", "--apply"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return journal


def site_factors(cluster: AccountingCluster, jobs: dict[str, int]) -> dict[str, int]:
    listed = cluster.sprio()
    return {name: listed[job_id][2] for name, job_id in jobs.items()}


def test_slurm_alone_puts_the_account_without_usage_first(cluster, queue) -> None:
    """(a) Fair-share counts: both acct_b jobs above A5; B5 and B9 tie."""
    listed = cluster.sprio()
    fairshare = {name: listed[job_id][1] for name, job_id in queue.items()}
    assert fairshare["B5"] == fairshare["B9"] > fairshare["A5"]
    prio = priorities(cluster, queue)
    assert prio["B5"] == prio["B9"] > prio["A5"]
    # The gap is the fair-share weight times the factors' gap, above rush's whole range in (b).
    assert prio["B5"] - prio["A5"] > WEIGHT


def test_rush_priority_weight_and_full_range_and_the_fairshare_term(cluster, queue, tmp_path) -> None:
    """(b), (c) and (d) in sequence on the same waiting jobs (each run rewrites every
    SiteFactor: a fresh journal remembers none)."""
    # (b) A small priority_weight: rush decides inside an account, fair-share across them.
    rush_once(cluster, tmp_path, "weighted", "SPF", f"priority_weight = {WEIGHT}")
    factors = site_factors(cluster, queue)
    # SPF, scaled: A5 and B5 (same limit) equal to rush, B9 behind.
    assert WEIGHT >= factors["A5"] == factors["B5"] > factors["B9"] >= 1
    prio = priorities(cluster, queue)
    # Fair-share decides between A5 and B5 (and still puts B9 above A5); rush's term
    # decides between B5 and B9, which fair-share tied.
    assert prio["B5"] > prio["B9"] > prio["A5"]

    # (c) The full range: rush's SiteFactor dwarfs PriorityWeightFairshare (the danger).
    rush_once(cluster, tmp_path, "full", "SPF", "")
    factors = site_factors(cluster, queue)
    assert factors["A5"] - factors["B9"] > FAIRSHARE_WEIGHT
    prio = priorities(cluster, queue)
    # A5 now above B9, which fair-share alone put first; A5 and B5 still tie for rush.
    assert prio["B5"] > prio["A5"] > prio["B9"]

    # (d) The site's factor as a term of rush's own policy.
    journal = rush_once(
        cluster,
        tmp_path,
        "fairshare",
        "LINEAR:r=1,fairshare=-1e6",
        f'fairshare = "rjms"\npriority_weight = {WEIGHT}',
    )
    factors = site_factors(cluster, queue)
    assert min(factors["B5"], factors["B9"]) > factors["A5"]
    prio = priorities(cluster, queue)
    assert min(prio["B5"], prio["B9"]) > prio["A5"]
    with sqlite3.connect(journal) as db:
        reasons = dict(
            db.execute(
                "SELECT job_id, reason FROM decisions WHERE action = 'priority' AND job_id IN (?, ?, ?)",
                tuple(queue.values()),
            ).fetchall()
        )
        read = dict(db.execute("SELECT job_id, fairshare FROM queue WHERE fairshare IS NOT NULL").fetchall())
    shares = cluster.shares()
    for name, job_id in queue.items():
        account = "acct_a" if name.startswith("A") else "acct_b"
        # The factor rush read and journaled is the one sshare shows for the job's association,
        # and the priority reason's LINEAR key is r - 1e6 * that factor (r: seconds, small here).
        factor = shares[(account, "root")][1]
        assert read[job_id] == pytest.approx(factor, abs=1e-6)
        key = float(re.search(r"LINEAR key (-?[0-9.e+]+)", reasons[job_id]).group(1))
        assert key == pytest.approx(-1e6 * factor, abs=1_000), reasons[job_id]


def test_fairshare_read_with_slurmdbd_unreachable(cluster, queue, tmp_path) -> None:
    """(e) Runs last in the module: it stops the cluster's slurmdbd."""
    cluster.stop_slurmdbd()
    journal = rush_once(
        cluster,
        tmp_path,
        "nodbd",
        "LINEAR:r=1,fairshare=-1e6",
        f'fairshare = "rjms"\npriority_weight = {WEIGHT}',
    )
    with sqlite3.connect(journal) as db:
        read = dict(db.execute("SELECT job_id, fairshare FROM queue WHERE fairshare IS NOT NULL").fetchall())
    shares = cluster.shares()  # still answered, by slurmctld
    for name, job_id in queue.items():
        account = "acct_a" if name.startswith("A") else "acct_b"
        assert read[job_id] == pytest.approx(shares[(account, "root")][1], abs=1e-6)
    prio = priorities(cluster, queue)
    assert min(prio["B5"], prio["B9"]) > prio["A5"]
