"""rush beside flux-accounting (fair-share) on REAL Flux instances with a real accounting DB.

Each test starts an instance, a flux-accounting DB and ``flux account-service`` (stopped by
its PID), two associations in one bank (root, and userid 5011 through a jobspec signed
"none" for that userid: ../shared/vendor/README.md's ``signas``; such jobs cannot run here,
no IMP), gives root usage with a real job and recomputes fair-share (root 0.5, 5011 1.0).

(a) priority mode: flux-accounting's ``mf_priority.so`` then rush's plugin with
    ``combine = "add"``; one daemon cycle with a small ``site.priority_weight``: fair-share
    still decides between jobs rush ranks the other way, rush's term between one
    association's jobs; the backend reads each job's factor (``fairshare`` option).
(b) scheduler mode: rush's module with ``LINEAR:r=1,fairshare=-1e6`` and
    ``site.fairshare = "rjms"`` starts the higher-fair-share association's job first although
    it was submitted later (r: the submit time, FCFS).
"""

from __future__ import annotations

import errno

import pytest

from rush.errors import RJMSError
from rush.planner.config import parse_config
from rush.planner.plan import Planner
from rush.rjms.flux import FluxBackend, association_fairshare, association_fairshares, memo_fairshare
from tests.flux import plugin_build
from tests.flux.accounting import (
    CORES,
    OTHER,
    SET,
    Accounting,
    mf_priority_or_skip,
    priorities,
    submit_other,
    submit_root,
)
from tests.flux.instance import FluxInstance
from tests.flux.module_config import MODULE, decisions, write_config
from tests.flux.plugin_build import wait_for


@pytest.fixture
def accounted(tmp_path):
    mf_priority_or_skip()
    started: list[tuple[FluxInstance, Accounting]] = []

    def start(*plugins: tuple[str, ...]) -> tuple[FluxInstance, Accounting]:
        inst = FluxInstance(tmp_path / f"flux{len(started)}", size=1, cores=CORES).start()
        acct = Accounting(inst)
        started.append((inst, acct))
        return inst, acct.start(*plugins)

    yield start
    for inst, acct in started:
        inst.cancel_all()
        acct.stop()
        inst.stop()


def test_priority_mode_adds_rushs_term_to_flux_accounting(accounted, tmp_path, tmp_path_factory):
    plugin = plugin_build.plugin_or_skip(tmp_path_factory)
    flux, acct = accounted((str(plugin), "combine=add"))
    assert acct.fairshares() == {(0, "bankA"): 0.5, (OTHER, "bankA"): 1.0, (0, "root"): 0.5}
    flux.run("queue", "stop")  # every job stays pending: priorities are read, nothing runs
    root_long, root_short, other = (
        submit_root(flux, "10m"),
        submit_root(flux, "1m"),
        submit_other(flux, "10m"),
    )
    jobs = [root_long, root_short, other]
    wait_for(lambda: all(j in priorities(flux) and priorities(flux)[j] > 0 for j in jobs))
    site = {j: priorities(flux)[j] for j in jobs}
    assert site == {root_long: 50000, root_short: 50000, other: 100000}  # mf_priority alone

    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "dry_run": False},
            "policy": {"policy": "SPF", "threshold": "none"},
            "site": {"priority_weight": 1000},  # small against fair-share's weight 100000
            "rjms": {"backend": "flux", "options": {"uri": flux.uri, "priority_lever": "plugin"}},
        }
    )
    backend = FluxBackend(uri=flux.uri, priority_lever="plugin", fairshare=True)
    planner = Planner(config, backend=backend)
    report = planner.run_cycle()
    assert report.ok and report.applied == {"priority": 3}
    rush = backend.plugin_priorities(jobs)
    # SPF alone would put other (10 minutes, submitted last) behind both of root's jobs.
    assert rush[root_short] > rush[root_long] >= rush[other] >= 1 and rush[root_short] <= 1000
    expect = {j: site[j] + rush[j] for j in jobs}
    wait_for(lambda: {j: priorities(flux)[j] for j in jobs} == expect)
    final = priorities(flux)
    assert final[other] > final[root_short] > final[root_long]  # fair-share first, then rush
    # A fair-share recomputation (every job reprioritized through both plugins) keeps the sum.
    acct.update()
    wait_for(lambda: {j: priorities(flux)[j] for j in jobs} == expect)
    # The backend reads each pending job's factor and bank from job-list (the plugin's memo).
    state = backend.read_state()
    assert {j.job_id: (j.fairshare, j.account) for j in state.pending} == {
        root_long: (0.5, "bankA"),
        root_short: (0.5, "bankA"),
        other: (1.0, "bankA"),
    }
    # The factor as an input of rush's policy in priority mode: LINEAR's fairshare term puts
    # the higher-fair-share job first in rush's own values, ahead of root's earlier jobs
    # (r = submit time alone, FCFS, would put it last).
    linear = config.model_copy(
        update={
            "policy": config.policy.model_copy(update={"policy": "LINEAR:r=1,fairshare=-1e6"}),
            # The full range: a weight of 1000 merges neighbouring ranks (scaled, order kept).
            "site": config.site.model_copy(update={"fairshare": "rjms", "priority_weight": None}),
            "daemon": config.daemon.model_copy(update={"journal": tmp_path / "linear.sqlite"}),
        }
    )
    assert Planner(linear, backend=backend).run_cycle().ok
    rush = backend.plugin_priorities(jobs)
    assert rush[other] > max(rush[root_short], rush[root_long])
    # In this mode 0 is a value (nothing added); below it, the batch is refused whole.
    handle = flux.handle()
    assert handle.rpc(SET, {"priorities": [[root_long, 0]]}).get()["set"] == 1
    with pytest.raises(OSError) as info:
        handle.rpc(SET, {"priorities": [[root_short, 5], [root_long, -1]]}).get()
    assert info.value.errno == errno.EPROTO and "0..4294967294" in info.value.strerror
    assert backend.plugin_priorities([root_short, root_long]) == {root_short: rush[root_short], root_long: 0}
    for conf in ("combine=sum", "combine=add default=-1"):
        assert flux.run("jobtap", "load", str(plugin), *conf.split(), check=False).returncode != 0, conf
    assert 'combine must be "replace"' in flux.run("dmesg").stdout


def test_scheduler_mode_orders_by_the_fairshare_term(accounted, tmp_path):
    flux, _ = accounted()
    config = write_config(
        tmp_path,
        # The policy alone: by default mf_priority's own priority (fair-share first) would
        # order the queue before the policy does, and hide the fairshare term under test.
        {
            "policy": "LINEAR:r=1,fairshare=-1e6",
            "backfill": "none",
            "threshold": "none",
            "rjms_priority": "ignore",
        },
        extra='[site]\nfairshare = "rjms"\n',
        interval=1,
    )
    flux.use_scheduler(str(MODULE), f"config={config}")
    blocker = flux.submit(f"-n{CORES}", "-t", "1m", "--setattr=system.bank=bankA", "sleep", "60")
    flux.run("job", "wait-event", "-t", "30", str(blocker), "start")
    # root's job comes first and asks for less time (r = submit time alone, FCFS, would start it first).
    root_job, other = submit_root(flux, "1m"), submit_other(flux, "2m")
    for job_id in (root_job, other):
        flux.run("job", "wait-event", "-t", "30", str(job_id), "priority")
    flux.run("cancel", str(blocker))
    flux.wait_job(root_job)
    flux.wait_job(other)  # allocated first, then refused at exec (no IMP here): it ends at once
    starts = [d["job_id"] for d in decisions(tmp_path, "start") if d["job_id"] in (root_job, other)]
    assert starts[:2] == [other, root_job], starts


# -- offline: the factor's checks -----------------------------------------------------------
def test_bad_factors_and_missing_associations_are_named_errors():
    table = association_fairshares(
        {"mf_priority_map": [{"userid": 7, "banks": [{"bank_name": "a", "fairshare": 1.5}]}]}
    )
    with pytest.raises(RJMSError) as info:
        association_fairshare(11, 7, "a", table)
    assert "job 11" in str(info.value) and "[0, 1]" in str(info.value) and "mf_priority" in info.value.fix
    with pytest.raises(RJMSError) as info:
        association_fairshare(12, 8, "a", table)
    assert "job 12" in str(info.value) and "association" in str(info.value)
    with pytest.raises(RJMSError):
        association_fairshares({"mf_priority_map": "garbage"})
    sched = 8  # SCHED: mf_priority has computed the priority, so the memo must be there
    for memo in ({}, {"user": {"fairshare": float("nan")}}, {"user": {"fairshare": True}}):
        with pytest.raises(RJMSError) as info:
            memo_fairshare({"id": 13, "state": sched, "annotations": memo})
        assert "job 13" in str(info.value)
    assert memo_fairshare({"id": 14, "state": 4}) is None  # PRIORITY: not computed yet
    assert memo_fairshare({"id": 15, "state": sched, "annotations": {"user": {"fairshare": 0.25}}}) == 0.25
