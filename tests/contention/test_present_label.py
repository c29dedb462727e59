"""The present-state label (round six, change o, in the study code): the option's checking, that the
label is the present-state oracle's answer at each run's start on a small real contention run, and
that a model is refused where the other label is expected.

The run is a slice of the campaign's own job stream (its WS block: 8, 16 and 32 nodes) through the
contention simulator on the paper's machine with the study's recorder in the oracle's place;
nothing is faked. A second, independent present-state oracle is asked the same questions beside
it, so the test knows what the oracle answered at every pass and when each job started.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from rush.contention.campaign import BLOCK_EVERY, campaign_jobs
from rush.contention.labels import PresentStateRecorder, check_model_label, model_name
from rush.contention.machine import PAPER
from rush.contention.noise import NoiseSchedule, NoiseSpec
from rush.contention.oracles import PresentStateOracle
from rush.contention.shell import Simulation
from rush.contention.state import Fabric
from rush.core.config import CoreConfig
from rush.errors import ConfigError, ModelError, RushError
from rush.studies.contention_labels import check_labels


@pytest.mark.parametrize("text", ["present", "", ",", "variation,oracle"])
def test_an_unknown_label_names_the_option_and_the_fix(text):
    with pytest.raises(ConfigError) as err:
        check_labels(text)
    assert err.value.where == "--label" and "present-state" in err.value.fix


def test_labels_keep_variation_and_their_order():
    assert check_labels("Present-State") == ("variation", "present-state")
    assert check_labels("variation") == ("variation",)
    assert model_name("RUSH-PRESENT-LABEL", "all") == "present-all"
    assert model_name("RUSH", "other4") == "other4"
    assert model_name("RUSH-MOVE-PRESENT-LABEL", "other4") == "present-other4"


def test_move_then_delay_with_the_present_state_label_is_rush_moves_rules_with_that_model(tmp_path):
    """Round seven's policy composes what exists: RUSH-MOVE's placement and skip limit, the
    present-state models (trained whenever it runs), no rule of its own."""
    import rush.contention.experiment as ex
    from rush.studies.contention import ContentionStudy, _present_state

    move, both = "RUSH-MOVE", "RUSH-MOVE-PRESENT-LABEL"
    assert both in ex.POLICIES and both in ex.LEARNED and both not in ex.BY_SIZE
    assert ex.PLACEMENT[both] == ex.PLACEMENT[move] and ex.skip_limit(both) == ex.skip_limit(move)
    assert _present_state(ContentionStudy(tmp_path, ["ADAA"], 1, 0, 1.0, policies=("FCFS+EASY", both)))
    assert not _present_state(ContentionStudy(tmp_path, ["ADAA"], 1, 0, 1.0, policies=("FCFS+EASY", move)))


def _run(oracle, seed: int = 5):
    """45 jobs of the campaign's WS block after a warm-up, FCFS+EASY, always-on noise."""
    rng = np.random.default_rng(seed)
    jobs = [j for j in campaign_jobs(rng, 1.5) if j.submit >= BLOCK_EVERY][:45]
    jobs = [replace(j, submit=j.submit - BLOCK_EVERY + 600.0) for j in jobs]
    noise = NoiseSpec()
    fabric = Fabric(PAPER, noise)
    schedule = NoiseSchedule.random(noise, rng, 86_400.0)
    sim = Simulation(jobs, CoreConfig.from_names("FCFS", "easy"), rng, schedule, fabric, oracle=oracle)
    return sim.run(), fabric


@pytest.fixture(scope="module")
def thresholds():
    """A bar of 6 % slowdown for every application: within the paper variant's reference bars
    (4-11 %), fixed here so the test need not run the 16-node reference queue."""
    from rush.contention.apps import APP_NAMES

    return {app: 1.06 for app in APP_NAMES}


def test_the_label_is_the_oracles_answer_at_each_runs_start(thresholds):
    recorder = PresentStateRecorder(thresholds)
    beside = PresentStateOracle(thresholds)
    asked: list[tuple[float, str, tuple[int, ...], bool]] = []

    def both(present, questions):
        flags = recorder(present, questions)
        for (spec, nodes), answer in zip(questions, beside(present, questions), strict=True):
            asked.append((present.t, str(spec.job_id), tuple(int(k) for k in nodes), bool(answer)))
        return flags

    results, fabric = _run(both)
    plain, _ = _run(None)
    # The recorder never flags: the run is the one without an oracle, job by job.
    assert [(r.job_id, r.start, r.hosts) for r in results] == [(r.job_id, r.start, r.hosts) for r in plain]
    assert set(recorder.answers) == {str(r.job_id) for r in results}
    hosts = fabric.machine.hosts
    for r in results:
        t, _, nodes, answer = [q for q in asked if q[1] == str(r.job_id)][-1]
        # The last question about a job is the one of the pass that started it, on its nodes.
        assert t == pytest.approx(r.start) and sorted(hosts[k] for k in nodes) == sorted(r.hosts)
        assert recorder.answers[str(r.job_id)] == answer
    # The oracle says yes to some and no to others here (else the label would say nothing).
    assert 0 < sum(recorder.answers.values()) < len(results)


# A real card of the study (the committed all-application model's, learned before round six: no
# ``label``), the template of the cards below; the model file itself is never read by the check.
STUDY_CARD = Path(__file__).resolve().parents[2] / "sim/variability/paper/models/variability-all.joblib.json"


def _model_with_card(tmp_path: Path, card: bytes) -> Path:
    model = tmp_path / "variability-all.joblib"
    model.write_bytes(b"not read: the label is checked on the card")
    (tmp_path / "variability-all.joblib.json").write_bytes(card)
    return model


def _card(**changes) -> bytes:
    return json.dumps(json.loads(STUDY_CARD.read_text()) | changes).encode()


def test_a_model_of_the_other_label_is_refused(tmp_path):
    model = _model_with_card(tmp_path, _card())  # a card before round six: "variation"
    check_model_label(model, "RUSH")
    check_model_label(model, "RUSH-MOVE")
    with pytest.raises(RushError) as err:
        check_model_label(model, "RUSH-PRESENT-LABEL")
    assert "label" in str(err.value.where) and "--label present-state" in err.value.fix
    model = _model_with_card(tmp_path, _card(label="present-state"))
    check_model_label(model, "RUSH-PRESENT-LABEL")
    check_model_label(model, "RUSH-MOVE-PRESENT-LABEL")
    for policy in ("RUSH", "RUSH-MOVE"):
        with pytest.raises(RushError):
            check_model_label(model, policy)


@pytest.mark.parametrize(
    "card, says",
    [
        pytest.param(lambda: _card(label="present-state")[:200], "not JSON", id="truncated"),
        pytest.param(lambda: bytes(range(256)) * 4, "card", id="binary"),
        pytest.param(
            lambda: b'{"label": "present-state", "model": "variability"' + b"\xff\xfe}",
            "card",
            id="not UTF-8",
        ),
        pytest.param(lambda: _card(label="present"), "label", id="unknown label"),
        pytest.param(lambda: _card(label=["present-state"]), "label", id="label a list"),
    ],
)
def test_a_hostile_card_is_refused_naming_the_file_and_the_fix(tmp_path, card, says):
    """The label is read through the validated card: a truncated, binary or wrong-label card is a
    ModelError naming the card's file and a fix, never a JSON or Unicode traceback."""
    model = _model_with_card(tmp_path, card())
    for policy in ("RUSH", "RUSH-MOVE-PRESENT-LABEL"):
        with pytest.raises(ModelError) as err:
            check_model_label(model, policy)
        assert "variability-all.joblib.json" in str(err.value.where)
        assert says in f"{err.value.message} {err.value.where}"
        assert err.value.fix
    if "label" in says:  # the card's own fix names the labels it may hold
        assert "present-state" in err.value.fix and "variation" in err.value.fix
