"""The variability study's report: hand-made trials whose numbers are worked out by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from matplotlib.image import imread

from rush.errors import ConfigError
from rush.studies.contention_report import markdown, summarise, write_report
from rush.studies.plots.contention import plot_study
from tests.studies.contention_rows import ask, job, trials


def test_paired_differences_and_the_oracle_share_are_exact() -> None:
    s = summarise(trials(), [])
    e = s["experiments"]["paper"]["ADAA"]
    assert e["FCFS+EASY"]["makespans"] == [1000.0, 2000.0]  # last end - first submit
    assert e["RUSH"]["runs_with_variation"] == 1.5
    assert e["RUSH"]["variation_per_trial"] == [1, 2]
    rush = s["paired"]["paper"]["ADAA"]["RUSH"]
    assert rush["removed"] == {"mean": 1.0, "min": 0.0, "max": 2.0, "per_trial": [2.0, 0.0]}
    assert rush["makespan_change_pct"]["per_trial"] == pytest.approx([10.0, -10.0])
    assert rush["makespan_change_pct"]["mean"] == pytest.approx(0.0)
    assert rush["removed_share_of_oracle"] == 0.5
    assert "FCFS+EASY" not in s["paired"]["paper"]["ADAA"]
    # An oracle that adds runs with variation, or none at all, gives no share (not a negative %).
    worse = [dict(r, variation=True) if r["policy"] == "PRESENT-ORACLE" else r for r in trials()]
    without = [r for r in trials() if r["policy"] != "PRESENT-ORACLE"]
    for rows in (worse, without):
        assert summarise(rows, [])["paired"]["paper"]["ADAA"]["RUSH"]["removed_share_of_oracle"] is None
    assert e["PRESENT-ORACLE"]["diagnostic"] and not e["RUSH"]["diagnostic"]


def test_within_experiment_threshold_is_pooled_over_policies_and_trials() -> None:
    # Slowdowns of SWFFT in ADAA: 1, 1 (FCFS+EASY) and 1, 3 (RUSH): mean 1.5, population
    # sigma sqrt(0.75), bar 1.5 + 1.5 sqrt(0.75) = 2.799; only the 3.0 run is above it.
    # Laghos has its own bar, 1.1 + 1.5 * 0.1 = 1.25 (slowdowns 1.0 and 1.2): 1.2 is below it.
    rows = [
        job("FCFS+EASY", 0, slowdown=1.0),
        job("FCFS+EASY", 0, job_id=2, slowdown=1.0),
        job("RUSH", 0, slowdown=1.0),
        job("RUSH", 0, job_id=2, slowdown=3.0, variation=True),
        job("FCFS+EASY", 0, "Laghos", job_id=3, slowdown=1.0),
        job("RUSH", 0, "Laghos", job_id=3, slowdown=1.2),
    ]
    s = summarise(rows, [])
    bar = s["thresholds_within"]["paper"]["ADAA"]
    assert bar["SWFFT"] == pytest.approx(1.5 + 1.5 * math.sqrt(0.75))
    assert bar["Laghos"] == pytest.approx(1.1 + 1.5 * 0.1)
    e = s["experiments"]["paper"]["ADAA"]
    assert e["RUSH"]["runs_with_variation_within"] == 1
    assert e["FCFS+EASY"]["runs_with_variation_within"] == 0
    assert e["RUSH"]["apps"]["SWFFT"]["threshold_within"] == pytest.approx(bar["SWFFT"])
    assert e["RUSH"]["apps"]["Laghos"]["runs_with_variation_within"] == 0


def test_flag_agreement_precision_two_thirds() -> None:
    # 2 true positives, 1 false positive, 2 misses, 3 agreed negatives.
    answers = [(True, True)] * 2 + [(True, False)] + [(False, True)] * 2 + [(False, False)] * 3
    preds = [ask("RUSH", f, o, trial=k % 2) for k, (f, o) in enumerate(answers)]
    s = summarise(trials(), preds)
    a = s["agreement"]["paper"]["ADAA"]["RUSH"]
    assert (a["tp"], a["fp"], a["fn"], a["tn"]) == (2, 1, 2, 3)
    assert a["precision"] == pytest.approx(2 / 3)
    assert a["recall"] == pytest.approx(0.5)
    assert a["f1"] == pytest.approx(4 / 7)
    assert (a["asked_per_trial"], a["flagged_per_trial"]) == (4.0, 1.5)
    text = markdown(s)
    assert "| paper | ADAA | RUSH | 8 | 3 | 4 | 2 | 1 | 2 | 3 | 0.667 | 0.500 | 0.571 |" in text
    # Nothing flagged: precision undefined, not 0 and not NaN in the JSON.
    quiet = summarise(trials(), [ask("RUSH", False, True), ask("RUSH", False, False)])
    b = quiet["agreement"]["paper"]["ADAA"]["RUSH"]
    assert (b["precision"], b["recall"], b["f1"]) == (None, 0.0, None)
    json.dumps(quiet, allow_nan=False)


def test_per_application_counts_divide_by_every_trial() -> None:
    # Laghos runs twice in trial 0 only, one of them hitting its skip limit: 1 run and 0.5
    # limit hits per trial over the experiment's two trials.
    rows = [job("RUSH", 0), job("RUSH", 1)]
    rows += [job("RUSH", 0, "Laghos", job_id=k, limit_hit=k == 2, skips=10 if k == 2 else 3) for k in (2, 3)]
    s = summarise(rows, [])
    e = s["experiments"]["paper"]["ADAA"]["RUSH"]
    assert e["apps"]["Laghos"]["runs"] == 1.0
    assert e["apps"]["Laghos"]["starts_at_limit_per_trial"] == 0.5
    assert e["apps"]["Laghos"]["flagged_starts_per_trial"] == 0.5
    assert e["apps"]["Laghos"]["variation_per_trial"] == [0, 0]
    assert e["starts_at_limit_per_trial"] == 0.5
    assert e["skips_per_trial"] == 6.5
    assert e["runs"] == 2.0


def test_markdown_has_the_expected_rows_and_labels_diagnostics() -> None:
    rows = trials() + [job("NOISE-ORACLE", 0), job("RUSH-UNLIMITED", 0), job("RUSH-UNLIMITED", 1)]
    rows += [job("RUSH-30", 0, limit_hit=True, skips=30), job("RUSH-30", 1)]
    text = markdown(summarise(rows, [ask("RUSH", True, True)]))
    lines = text.splitlines()
    row = next(x for x in lines if x.startswith("| ADAA | RUSH | 2 |"))
    # runs, with variation campaign / within, removed (campaign), removed (within), share of the oracle's.
    assert row.startswith(
        "| ADAA | RUSH | 2 | 4.0 | 1.5 / 0.0 | +1.0 [+0.0, +2.0] | +0.0 [+0.0, +0.0] | 50 / — % |"
    )
    assert "0.0 % [-10.0, +10.0] |" in row  # +10 % and -10 %: a mean of 0
    assert row.endswith("| 10 | 0.0 | 0.0 | 0.5 / 0.5 |")
    baseline = next(x for x in lines if x.startswith("| ADAA | FCFS+EASY | 2 |"))
    assert baseline.endswith("| — | 0.0 | 0.0 | — |")  # FCFS+EASY has no skip limit and no flags
    assert any(x.startswith("| ADAA | PRESENT-ORACLE (diagnostic) |") for x in lines)
    assert any(x.startswith("| ADAA | NOISE-ORACLE (diagnostic) | 1 |") for x in lines)
    assert not any(x.startswith("| ADAA | PRESENT-ORACLE |") for x in lines)
    # Skip-limit sensitivity: FCFS+EASY as the reference, then RUSH by growing limit.
    sens = [x for x in lines[lines.index("## Skip-limit sensitivity") :] if x.startswith("| paper |")]
    assert [x.split(" | ")[2:4] for x in sens] == [
        ["FCFS+EASY", "—"],
        ["RUSH", "10"],
        ["RUSH-30", "30"],
        ["RUSH-UNLIMITED", "unlimited"],
    ]
    assert sens[2].split(" | ")[8:10] == ["0.5", "0.5"]  # RUSH-30: one start at its limit in two trials
    # Every SWFFT slowdown is 1.0: the within bar is 1.0 and no run is above it.
    assert "| ADAA | SWFFT | RUSH | 1.000 | 4.0 | 1.5 / 0.0 | 100 / 100 | 0 | 0.0 | 0.0 |" in text


def test_flagged_starts_and_starts_at_the_skip_limit_are_counted_apart() -> None:
    """RUSH-MOVE-like trials: a flagged job moved to quiet leaves starts with no skip (a flagged
    start, not a start at the limit); one job starts flagged after its 10 skips (both); one is
    released flagged by an idle machine after 4 skips (flagged only); an unflagged job with 12
    skips started on a "no" (neither). Per trial over two trials: 2.5 flagged starts, 0.5 at the limit."""
    rows = [job("FCFS+EASY", t, job_id=k) for t in (0, 1) for k in range(4)]
    rows += [job("RUSH-MOVE", 0, job_id=k, limit_hit=True) for k in range(3)]  # moved, no skip
    rows += [job("RUSH-MOVE", 0, job_id=3, limit_hit=True, skips=10)]  # at the limit
    rows += [job("RUSH-MOVE", 1, job_id=0, limit_hit=True, skips=4)]  # idle release
    rows += [job("RUSH-MOVE", 1, job_id=1, skips=12)]  # not flagged when it started
    rows += [job("RUSH-MOVE", 1, job_id=k) for k in (2, 3)]
    rows += [job("RUSH-UNLIMITED", 0, job_id=0, limit_hit=True, skips=40)]  # no limit to reach
    s = summarise(rows, [])
    e = s["experiments"]["paper"]["ADAA"]["RUSH-MOVE"]
    assert e["flagged_starts_per_trial"] == 2.5
    assert e["starts_at_limit_per_trial"] == 0.5
    assert e["apps"]["SWFFT"]["flagged_starts_per_trial"] == 2.5
    assert e["apps"]["SWFFT"]["starts_at_limit_per_trial"] == 0.5
    unlimited = s["experiments"]["paper"]["ADAA"]["RUSH-UNLIMITED"]
    assert (unlimited["flagged_starts_per_trial"], unlimited["starts_at_limit_per_trial"]) == (1.0, 0.0)
    lines = markdown(s).splitlines()
    header = next(x for x in lines if x.startswith("| scenario | policy | trials |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    row = next(x for x in lines if x.startswith("| ADAA | RUSH-MOVE | 2 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[columns.index("flagged starts / trial")] == "2.5"
    assert cells[columns.index("starts at the skip limit / trial")] == "0.5"


def test_unlimited_limit_is_written_unlimited() -> None:
    rows = [job("FCFS+EASY", 0), job("RUSH-UNLIMITED", 0, skips=40)]
    s = summarise(rows, [])
    assert s["experiments"]["paper"]["ADAA"]["RUSH-UNLIMITED"]["skip_limit"] == -1
    row = next(x for x in markdown(s).splitlines() if x.startswith("| ADAA | RUSH-UNLIMITED |"))
    assert "| unlimited |" in row and "-1" not in row


def test_empty_predictions_and_a_single_trial() -> None:
    rows = [job("FCFS+EASY", 3, end=200.0), job("RUSH", 3, end=250.0)]
    s = summarise(rows, [])
    assert s["agreement"] == {}
    d = s["paired"]["paper"]["ADAA"]["RUSH"]["makespan_change_pct"]
    assert d == {"mean": 25.0, "min": 25.0, "max": 25.0, "per_trial": [25.0]}
    text = markdown(s)
    assert "No predictions were recorded." in text
    row = next(x for x in text.splitlines() if x.startswith("| ADAA | RUSH | 1 |"))
    assert "| +25.0 % |" in row and "[" not in row  # one trial: no range
    assert row.endswith("| — |")  # never asked: no flag counts


def test_summary_is_plain_json() -> None:
    s = summarise(trials(), [ask("RUSH", True, False)])

    def walk(x: object) -> None:
        assert type(x) in (dict, list, str, int, float, bool, type(None)), type(x)
        if isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(s)
    assert json.loads(json.dumps(s, allow_nan=False)) == s


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ({"slowdown": None}, "rows[1].slowdown"),
        ({"limit_hit": "yes"}, "rows[1].limit_hit"),
        ({"skip_limit": -2}, "rows[1].skip_limit"),
        ({"runtime": math.nan}, "rows[1].runtime"),
    ],
)
def test_a_bad_row_names_the_row_and_key(bad: dict, where: str) -> None:
    with pytest.raises(ConfigError) as info:
        summarise([job("RUSH", 0), job("RUSH", 0, **bad)], [])
    assert info.value.where == where


def test_a_prediction_without_the_oracle_answer_is_refused() -> None:
    broken = ask("RUSH", True, True)
    del broken["oracle_flag"]
    with pytest.raises(ConfigError) as info:
        summarise([job("RUSH", 0)], [broken])
    assert info.value.where == "predictions[0].oracle_flag"
    assert "oracle" in str(info.value)


def test_plot_study_writes_the_figures(tmp_path: Path) -> None:
    rows = trials() + [job("RUSH-UNLIMITED", t, job_id=k, end=900.0 + k) for t in (0, 1) for k in range(2)]
    rows += [job("FCFS+EASY", 0, "Laghos", job_id=9, runtime=300.0), job("RUSH", 0, "Laghos", job_id=9)]
    rows += [dict(r, variant="multipod") for r in rows if r["policy"] in ("FCFS+EASY", "RUSH")]
    summary = write_report(tmp_path, rows, [ask("RUSH", True, True)], plots=False)
    written = plot_study(tmp_path, rows, summary)
    names = sorted(p.name for p in written)
    assert names == sorted(
        f"{name}{tail}.png"
        for tail in ("", "-multipod")
        for name in ("fig4_variation_runs", "fig5_runtimes", "fig6_makespan", "skip_limit")
    )
    for path in written:
        assert path.parent == tmp_path / "plots"
        height, width, _ = imread(path).shape
        assert width > 400 and height > 300
    assert json.loads((tmp_path / "results" / "summary.json").read_text()) == summary
    assert (tmp_path / "results" / "tables.md").read_text() == markdown(summary)


def test_start_decisions_are_each_jobs_last_question() -> None:
    """Job 1 is flagged twice (agreeing with the oracle) then starts on a "no" the oracle calls
    wrong; job 2 is asked once and starts on an agreed "no". Per question: recall 2/3; at the
    start decisions: one job started against the oracle, recall 0."""
    preds = [
        ask("RUSH", True, True, job_id=1, t=10.0),
        ask("RUSH", True, True, job_id=1, t=20.0),
        ask("RUSH", False, True, job_id=1, t=30.0),
        ask("RUSH", False, False, job_id=2, t=15.0),
    ]
    a = summarise(trials(), preds)["agreement"]["paper"]["ADAA"]["RUSH"]
    assert a["recall"] == pytest.approx(2 / 3)
    start = a["at_start"]
    assert (start["asked"], start["tp"], start["fp"], start["fn"], start["tn"]) == (2, 0, 0, 1, 1)
    assert start["recall"] == 0.0
    text = markdown(summarise(trials(), preds))
    assert "| paper | ADAA | RUSH | 2 | 0 | 1 | 1 | — | 0.000 | — |" in text
