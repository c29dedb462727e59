"""Fair-share in the simulator (issue 22): Slurm's classic factor over decayed usage
(rush.core.fairshare), recomputed every calc period while the replay runs, read by LINEAR's
``fairshare`` term; the site's summary; bad settings refused."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from rush.cli.main import app
from rush.core.config import CoreConfig
from rush.core.fairshare import (
    DecayedFairShare,
    associations,
    classic_factors,
    close_period,
    decayed_usage,
    fair_share_tree,
    new_ledger,
    run_ends,
    run_starts,
)
from rush.errors import ConfigError, RushError
from rush.simulator.engine import SimInputs, simulate
from rush.simulator.metrics import fair_share_summary
from rush.workload.model import Workload, workload_from_trace
from tests.core.real_traces import MIRROR

KTH = MIRROR / "KTH-SP2-1996-2.1-cln.swf.gz"
FAVOUR_FAIRSHARE = "LINEAR:r=1,fairshare=-1e9"  # submit order, unless fair-share differs


def _tree(user: list[int], group: list[int] | None, model: DecayedFairShare):
    found = associations(np.array(user), None if group is None else np.array(group), model)
    return found, fair_share_tree(found, model, 0.0)


def _factors(tree, usage: list[float]) -> np.ndarray:
    """The factors of associations with this (decayed) usage."""
    ledger = new_ledger(tree, 0)
    ledger.usage[:] = usage
    if tree.n_groups:
        ledger.group_usage[:] = np.bincount(tree.assoc_group, weights=usage, minlength=tree.n_groups)
    ledger.total[0] = sum(usage)
    return classic_factors(ledger, tree)


def test_classic_factor_for_two_users_is_two_to_the_minus_usage_over_share() -> None:
    _, tree = _tree([7, 9], None, DecayedFairShare(half_life=3600))
    # U = 3/4 and 1/4 of the usage, S = 1/2 each: F = 2**(-1.5) and 2**(-0.5).
    assert np.allclose(_factors(tree, [3.0, 1.0]), [2**-1.5, 2**-0.5])
    assert np.array_equal(_factors(tree, [0.0, 0.0]), [1.0, 1.0])  # nobody used anything yet


def test_classic_factor_under_accounts_uses_the_effective_usage() -> None:
    # Group 1 holds users 1 and 2, group 2 user 3: S = 1/4, 1/4, 1/2.
    found, tree = _tree([1, 2, 3], [1, 1, 2], DecayedFairShare(half_life=3600, by_group=True))
    assert np.allclose(found.norm_share, [0.25, 0.25, 0.5])
    # Usage 2, 0, 2: U = 1/2, 0, 1/2; both accounts used 1/2. UE = U + (UE_account - U) * 1/2
    # for users 1, 2 (1/2 and 1/4), and UE = 1/2 for user 3, alone in its account.
    assert np.allclose(_factors(tree, [2.0, 0.0, 2.0]), [2**-2.0, 2**-1.0, 2**-1.0])


def test_unequal_raw_shares_are_normalised() -> None:
    found, tree = _tree([1, 2], None, DecayedFairShare(half_life=3600, user_shares={1: 3.0}))
    assert np.allclose(found.norm_share, [0.75, 0.25])
    # Equal usage: the user with three times the share is under its share, the other over.
    assert np.allclose(_factors(tree, [1.0, 1.0]), [2 ** (-0.5 / 0.75), 2 ** (-0.5 / 0.25)])


def test_usage_decays_by_half_each_half_life_and_the_period_is_added_undecayed() -> None:
    model = DecayedFairShare(half_life=600, calc_period=300)
    _, tree = _tree([1, 2], None, model)
    ledger = new_ledger(tree, 2)
    run_starts(ledger, tree, 0, 4, 0.0)  # job 0 (user 1): 4 processors through the first period
    close_period(ledger, tree)  # tick at 300
    assert np.allclose(decayed_usage(ledger), [1200.0, 0.0])
    assert ledger.clock[1] == 300.0 and ledger.clock[0] == 600.0
    run_ends(ledger, tree, 0, 4, 300.0)
    run_starts(ledger, tree, 1, 2, 400.0)  # job 1 (user 2): 2 processors from 400 to 500
    run_ends(ledger, tree, 1, 2, 500.0)
    close_period(ledger, tree)  # tick at 600: the old usage decayed once, the new added whole
    assert np.allclose(decayed_usage(ledger), [1200.0 * 2**-0.5, 200.0])
    for _ in range(2):  # one half-life without usage
        close_period(ledger, tree)
    usage = decayed_usage(ledger)
    assert np.allclose(usage, [1200.0 * 2**-1.5, 100.0])
    assert np.allclose(classic_factors(ledger, tree), _factors(tree, list(usage)))


def _two_users(jobs_each: int = 5) -> Workload:
    """One processor; user 1 submits its jobs first, then user 2: each job takes the machine
    for 1000 s."""
    n = 2 * jobs_each
    return Workload(
        job_id=np.arange(n),
        submit=np.arange(n, dtype=float),
        runtime=np.full(n, 1000.0),
        procs=np.ones(n, dtype=np.int64),
        requested_time=np.full(n, 1000.0),
        user=np.repeat([1, 2], jobs_each),
        machine_procs=1,
    )


def test_a_heavy_users_jobs_lose_priority_as_its_usage_grows() -> None:
    workload = _two_users()
    config = CoreConfig.from_names(FAVOUR_FAIRSHARE, "easy", "none")
    static = simulate(workload, config)
    model = DecayedFairShare(half_life=86400, calc_period=300)
    dynamic = simulate(workload, config, SimInputs(fair_share_model=model))
    # Without usage every job has the same factor: submit order, user 1's jobs first.
    assert np.array_equal(np.argsort(static.start), np.arange(10))
    # With it, user 1's first job charges user 1; user 2's jobs then go ahead of its next ones.
    order = workload.user[np.argsort(dynamic.start)]
    assert order[0] == 1 and order[1] == 2
    assert dynamic.start[workload.user == 2].mean() < static.start[workload.user == 2].mean()
    factor = dynamic.attributes["fairshare"]
    assert factor[0] == 1.0 and factor[1] < 1.0  # the first start saw no usage, the second did
    summary = fair_share_summary(dynamic)
    assert summary["associations_count"] == 2
    assert {row["user"] for row in summary["associations"]} == {1, 2}
    assert all(row["target_share"] == 0.5 for row in summary["associations"])
    assert 0.0 <= summary["share_gap"] < 0.5
    assert len(summary["mean_wait_by_usage_decile"]) == 2


def _kth(jobs: int = 3000) -> Workload:
    if not KTH.exists():
        pytest.skip(f"trace {KTH} not available: set RUSH_TRACE_MIRROR to the traces directory")
    from rush.workload.swf import read_swf

    return workload_from_trace(read_swf(KTH)).subset(np.arange(jobs))


@pytest.mark.parametrize("policy", ["FCFS", "LINEAR:wait=-1,p=0.01,fairshare=0"])
def test_with_the_weight_zero_the_model_changes_nothing(policy: str) -> None:
    workload = _kth()
    config = CoreConfig.from_names(policy, "easy", 200_000)
    static = simulate(workload, config)
    dynamic = simulate(workload, config, SimInputs(fair_share_model=DecayedFairShare(half_life=7 * 86400)))
    for name in ("start", "end", "backfilled", "skips"):
        assert np.array_equal(getattr(static, name), getattr(dynamic, name)), name
    assert dynamic.attributes["fairshare"][dynamic.start >= 0].min() < 1.0  # the model did run


def test_on_a_real_trace_fair_share_moves_usage_towards_the_shares() -> None:
    workload = _kth()
    model = DecayedFairShare(half_life=86400, by_group=True)
    inputs = SimInputs(fair_share_model=model)
    plain = fair_share_summary(simulate(workload, CoreConfig.from_names("FCFS", "easy", 200_000), inputs))
    fair = fair_share_summary(
        simulate(workload, CoreConfig.from_names(FAVOUR_FAIRSHARE, "easy", 200_000), inputs)
    )
    assert fair["associations_count"] == plain["associations_count"] > 10
    heaviest = plain["associations"][0]
    same = next(
        r for r in fair["associations"] if (r["user"], r["group"]) == (heaviest["user"], heaviest["group"])
    )
    assert same["mean_wait"] > heaviest["mean_wait"]  # the heaviest user waits longer for it


@pytest.mark.parametrize(
    ("settings", "where"),
    [
        ({"half_life": 0}, "half_life"),
        ({"half_life": -5.0}, "half_life"),
        ({"half_life": float("nan")}, "half_life"),
        ({"half_life": 3600, "calc_period": 0}, "calc_period"),
        ({"half_life": 3600, "calc_period": float("inf")}, "calc_period"),
        ({"half_life": 3600, "user_shares": {4: 0.0}}, "user_shares[4]"),
        ({"half_life": 3600, "group_shares": {2: -1.0}}, "group_shares[2]"),
    ],
)
def test_bad_settings_are_refused(settings: dict, where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        DecayedFairShare(**settings)
    assert where in caught.value.where


def test_a_model_and_static_factors_together_are_refused() -> None:
    inputs = SimInputs(fairshare=np.full(10, 0.5), fair_share_model=DecayedFairShare(half_life=3600))
    with pytest.raises(RushError, match="both"):
        simulate(_two_users(), CoreConfig(), inputs)


def test_by_group_without_groups_is_refused() -> None:
    with pytest.raises(ConfigError, match="group"):
        associations(np.array([1, 2]), None, DecayedFairShare(half_life=3600, by_group=True))


def test_a_summary_of_a_run_without_the_model_is_refused() -> None:
    with pytest.raises(RushError, match="no fair-share"):
        fair_share_summary(simulate(_two_users(), CoreConfig()))


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--fairshare-half-life", "0"], "--fairshare-half-life"),
        (["--fairshare-half-life", "7x"], "--fairshare-half-life"),
        (["--fairshare-half-life", "-1d"], "--fairshare-half-life"),
        (["--fairshare-half-life", "7d", "--fairshare-period", "nan"], "--fairshare-period"),
        (["--fairshare-period", "300"], "--fairshare-period"),
        (["--fairshare-by-group"], "--fairshare-by-group"),
    ],
)
def test_bad_fair_share_flags_exit_2_naming_the_flag(flags: list[str], named: str) -> None:
    result = CliRunner().invoke(app, ["simulate", "lublin:50:16", *flags])
    assert isinstance(result.exception, ConfigError), (result.output, result.exception)
    assert result.exception.where == named


def test_simulate_with_a_half_life_reports_the_fair_share_summary() -> None:
    import json

    args = [
        "simulate",
        "lublin:300:32:3",
        "--policy",
        FAVOUR_FAIRSHARE,
        "--fairshare-half-life",
        "2h",
        "--json",
    ]
    result = CliRunner().invoke(app, [*args, "--fairshare-period", "10m"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["fair_share"]
    assert (summary["half_life"], summary["calc_period"]) == (7200.0, 600.0)
    # A generated trace has no users: one association, which used everything it was given.
    assert summary["associations_count"] == 1 and summary["share_gap"] == 0.0


def test_a_sacct_trace_is_reported_by_account_and_user_name(tmp_path) -> None:
    import json

    from tests.workload.sacct_samples import PARSABLE

    trace = tmp_path / "sacct.txt"
    trace.write_text(PARSABLE)
    args = ["simulate", str(trace), "--fairshare-half-life", "7d", "--fairshare-by-group", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["fair_share"]["associations"]
    # carol in physics and dave in bio: two accounts of one user each, half the machine each.
    assert {(r["group_name"], r["user_name"]) for r in rows} == {("physics", "carol"), ("bio", "dave")}
    assert all(r["target_share"] == 0.5 for r in rows)


def _factors_at_starts_by_brute_force(workload: Workload, result, model: DecayedFairShare) -> np.ndarray:
    """Slurm's procedure written out tick by tick, from the run's own starts and ends: at each
    tick, usage = usage * D + the period's processor-seconds per user; a job starting at t
    sees the factors of the last tick at or before t."""
    users, assoc = np.unique(workload.user, return_inverse=True)
    first, period = workload.submit[0], model.calc_period
    ticks = first + period * np.arange(1, int((result.end.max() - first) // period) + 2)
    used = np.zeros((len(ticks), len(users)))  # processor-seconds in the period ending at each tick
    for j in range(len(workload)):
        overlap = np.minimum(result.end[j], ticks) - np.maximum(result.start[j], ticks - period)
        used[:, assoc[j]] += workload.procs[j] * np.clip(overlap, 0.0, None)
    decay = 2.0 ** (-period / model.half_life)
    usage = np.zeros(len(users))
    factor_after = []
    for k in range(len(ticks)):
        usage = usage * decay + used[k]
        factor_after.append(
            2.0 ** (-(usage / usage.sum()) * len(users)) if usage.sum() > 0 else np.ones(len(users))
        )
    out = np.empty(len(workload))
    for j in range(len(workload)):
        k = np.searchsorted(ticks, result.start[j], side="right") - 1
        out[j] = 1.0 if k < 0 else factor_after[k][assoc[j]]
    return out


def test_the_factors_at_starts_are_slurms_tick_by_tick_computation() -> None:
    workload = _kth(400)
    model = DecayedFairShare(half_life=6 * 3600, calc_period=600)
    result = simulate(
        workload, CoreConfig.from_names(FAVOUR_FAIRSHARE, "easy", 200_000), SimInputs(fair_share_model=model)
    )
    assert (result.start >= 0).all() and not result.requeues.any()
    expected = _factors_at_starts_by_brute_force(workload, result, model)
    assert np.allclose(result.attributes["fairshare"], expected, rtol=1e-9, atol=1e-12)
    assert expected.min() < 0.5  # usage did build up
