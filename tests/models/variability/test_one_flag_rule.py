"""One flag rule (rush.core.variation_flag) for the live planner and the contention simulator: for
the same window features and the same model card, the daemon's predictor and the contention
shell's learned oracle flag the same jobs, and the live predictor honours the card's per-size
thresholds (``flag_threshold_by_size``) when ``variation.flag_by_size = true``, and only then."""

from __future__ import annotations

import json
import shutil
import tomllib

import numpy as np
import pytest

from rush.collect.store import FeatureStore
from rush.contention.apps import APPS
from rush.contention.experiment import learned_oracle
from rush.contention.oracles import LearnedOracle
from rush.contention.shell import JobSpec
from rush.core.resources import Request
from rush.daemon.service import Daemon
from rush.planner.config import parse_config
from rush.planner.variation import get_predictor
from rush.rjms.base import ClusterState, RJMSJob
from tests.models.variability.synth import PERIOD, T0
from tests.queue_backend import Queue
from tests.rush_cli import rush

# Moments through a noise period's start and end (the window partly noisy) and two quiet ones,
# so that P(variation) takes several values.
MOMENTS = [T0 + 2 * PERIOD + dt for dt in (*np.arange(0.0, 900.0, 30.0), 1500.0, 2500.0)]
SIZES = (4, 8, 12, 16, 20, 24, 32, 64)
WTYPES = ("network", "compute")


def app_of(wtype: str) -> str:
    return next(name for name, app in APPS.items() if app.wtype == wtype)


def pending(job_id: int, wtype: str, nodes: int | None) -> RJMSJob:
    request = None if nodes is None else Request(nodes=nodes, cores_per_node=1)
    return RJMSJob(job_id, "PENDING", T0, nodes or 1, 3600.0, tags={"wtype": wtype}, request=request)


def p_of(predictor, now: float) -> dict[str, float]:
    """P(variation) of each workload type at ``now``, from the model itself."""
    _, proba = predictor.classify(predictor.current_features(now), WTYPES)
    return dict(zip(WTYPES, proba[:, predictor.class_names.index("variation")].tolist(), strict=True))


@pytest.fixture(scope="module")
def sized_model(model_file, campaign, tmp_path_factory):
    """A copy of the session's model whose card has a per-size table splitting the probabilities
    seen at MOMENTS differently at each size, and a one threshold between them."""
    live = get_predictor("learned", source=campaign[1], model=model_file)
    seen = sorted({p for now in MOMENTS for p in p_of(live, now).values()})
    assert len(seen) >= 4, f"the synthetic campaign gives too few probabilities ({seen}) to test the rule"
    cut = [(a + b) / 2.0 for a, b in zip(seen, seen[1:], strict=False)]
    copy = tmp_path_factory.mktemp("sized") / model_file.name
    shutil.copy(model_file, copy)
    card = json.loads(model_file.with_name(model_file.name + ".json").read_text())
    card["flag_threshold"] = cut[1]
    card["flag_threshold_by_size"] = {"8": cut[0], "16": cut[1], "32": cut[-1]}
    copy.with_name(copy.name + ".json").write_text(json.dumps(card))
    return copy, card


def daemon_predictor(path, store, flag_by_size: bool | None):
    """The learned predictor as the daemon and the Flux module build it from rush.toml (the
    setting absent when ``flag_by_size`` is None: its default)."""
    setting = "" if flag_by_size is None else f"flag_by_size = {str(flag_by_size).lower()}\n"
    config = parse_config(
        tomllib.loads(
            f'[variation]\nenabled = true\npredictor = "learned"\nmodel = "{path}"\nstore = "{store}"\n'
            + setting
        )
    )
    return get_predictor(config.variation.predictor, **config.variation.predictor_options())


@pytest.mark.parametrize("flag_by_size", [True, False, None])
def test_the_live_planner_and_the_contention_oracle_flag_the_same_jobs(
    sized_model, campaign, flag_by_size
) -> None:
    """Same card, same setting: the daemon's predictor (from rush.toml) and the contention study's
    oracle (RUSH-SIZE for flag_by_size = true, RUSH otherwise) flag the same jobs, and by the
    rule written out: the nearest size's threshold with the setting, the one threshold without."""
    path, card = sized_model
    table = {int(k): v for k, v in card["flag_threshold_by_size"].items()}
    live = daemon_predictor(path, campaign[1], flag_by_size)
    jobs = [pending(k, w, n) for k, (w, n) in enumerate((w, n) for w in WTYPES for n in SIZES)]
    hosts = [[f"n{i:02d}" for i in range(min(n, 8))] for n in SIZES] * len(WTYPES)
    by_size_only = 0  # flags where the size's threshold and the one threshold disagree
    policy = "RUSH-SIZE" if flag_by_size else "RUSH"
    # prepare.json's entry for the model, as the study passes it to its trials
    prepared = {"path": str(path), "flag_threshold_by_size": card["flag_threshold_by_size"]}
    with FeatureStore(campaign[1]) as store:
        oracle = learned_oracle(policy, prepared, store, np.random.default_rng(0))
        for now in MOMENTS:
            features = live.current_features(now)
            live_flags = live.predict(jobs, now)
            assert live.predict_on(jobs, now, hosts) == live_flags  # at a tentative placement: the same
            specs = [JobSpec(j.job_id, app_of(j.tags["wtype"]), j.request.nodes, T0) for j in jobs]
            assert live_flags == [oracle._flag(features, spec) for spec in specs], now
            # The rule written out: P(variation) against the nearest listed size's threshold or the one.
            p = p_of(live, now)
            if flag_by_size:
                applied = [table[min(table, key=lambda s: (abs(s - j.request.nodes), s))] for j in jobs]
            else:
                applied = [card["flag_threshold"]] * len(jobs)
            assert live_flags == [p[j.tags["wtype"]] >= t for j, t in zip(jobs, applied, strict=True)]
            # Each job's journal output carries the threshold that decided it.
            assert [live.job_outputs(j.job_id)["variation_threshold"] for j in jobs] == applied
            by_size_only += sum(
                f != (p[j.tags["wtype"]] >= card["flag_threshold"])
                for j, f in zip(jobs, live_flags, strict=True)
            )
    sized = ["variation_threshold_nodes" in live.job_outputs(j.job_id) for j in jobs]
    if flag_by_size:
        assert by_size_only > 0  # the table changed decisions: the test is not vacuous
        assert all(sized)
    else:  # the default ignores the card's table
        assert by_size_only == 0
        assert not any(sized)


def test_a_job_of_unknown_size_takes_the_one_threshold(sized_model, campaign) -> None:
    path, card = sized_model
    live = daemon_predictor(path, campaign[1], True)
    unsized = [pending(0, "network", None), pending(1, "compute", None)]
    for now in MOMENTS:
        p = p_of(live, now)
        assert live.predict(unsized, now) == [p[w] >= card["flag_threshold"] for w in WTYPES]


def test_the_contention_shells_rush_keeps_the_one_threshold(sized_model, campaign) -> None:
    """RUSH (no by_size) in the contention study: the card's table is not applied, as before."""
    path, card = sized_model
    with FeatureStore(campaign[1]) as store:
        oracle = LearnedOracle(store, path, np.random.default_rng(0))
        for now in MOMENTS:
            features, p = oracle.predictor.current_features(now), p_of(oracle.predictor, now)
            for w in WTYPES:
                flags = {oracle._flag(features, JobSpec(1, app_of(w), n, T0)) for n in SIZES}
                assert flags == {p[w] >= card["flag_threshold"]}


@pytest.fixture(scope="module")
def tiny_thresholds_model(model_file, tmp_path_factory):
    """A copy of the session's model whose thresholds are all tiny (every network job in a noise
    period is held) and differ per size, so the journal shows which one decided."""
    copy = tmp_path_factory.mktemp("tiny") / model_file.name
    shutil.copy(model_file, copy)
    card = json.loads(model_file.with_name(model_file.name + ".json").read_text())
    card["flag_threshold"] = 0.001
    card["flag_threshold_by_size"] = {"8": 0.002, "32": 0.003}
    copy.with_name(copy.name + ".json").write_text(json.dumps(card))
    return copy


@pytest.mark.parametrize(
    ("flag_by_size", "applied"),
    [(True, {8: (0.002, 8), 30: (0.003, 32)}), (False, {8: (0.001, None), 30: (0.001, None)})],
)
def test_the_journal_records_the_threshold_applied_to_each_job(
    tiny_thresholds_model, campaign, tmp_path, flag_by_size, applied
) -> None:
    """A daemon cycle holds two network jobs (8 and 30 nodes) during noise: each hold row's model
    outputs carry the threshold that decided that job (and the table's size it was taken for),
    not the card's table, and rush explain shows it."""
    noisy = MOMENTS[14]  # 420 s into the noise period: the whole window is noisy
    state = ClusterState(noisy, 64, 64, tuple(pending(n, "network", n) for n in applied))
    config = parse_config(
        {
            "daemon": {"journal": str(tmp_path / "journal.sqlite"), "dry_run": False},
            "variation": {
                "enabled": True,
                "predictor": "learned",
                "store": str(campaign[1]),
                "model": str(tiny_thresholds_model),
                "flag_by_size": flag_by_size,
            },
        }
    )
    daemon = Daemon(config, backend=Queue(state))
    report = daemon.run_cycle()
    assert report.ok, report.error
    assert sorted(daemon.backend.held) == sorted(applied)
    for job_id, (threshold, nodes) in applied.items():
        held = [d["model_outputs"] for d in daemon.journal.decisions(job_id) if d["action"] == "hold"]
        assert held, daemon.journal.decisions(job_id)
        for outputs in held:
            assert outputs["variation_threshold"] == threshold
            assert outputs.get("variation_threshold_nodes") == nodes
            assert "{" not in outputs["variation_rule"]  # one threshold, not the table
    daemon.journal.close()
    shown = rush("explain", "30", "--journal", str(tmp_path / "journal.sqlite"))
    assert shown.returncode == 0, shown.stderr
    threshold, nodes = applied[30]
    assert f'"variation_threshold": {threshold}' in shown.stdout
    assert ('"variation_threshold_nodes": 32' in shown.stdout) == (nodes == 32)
