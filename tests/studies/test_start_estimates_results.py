"""`sim/start_estimates/results.md` is what `summarize.py` makes of the committed runs
(`results/*.json`): a run added or rerun without regenerating it fails here (round 28 found it
four rounds behind its files)."""

from __future__ import annotations

from pathlib import Path

from tests.script_module import load_script

STUDY = Path(__file__).resolve().parents[2] / "sim" / "start_estimates"


def test_results_md_is_the_committed_runs_summary() -> None:
    summarize = load_script(STUDY / "summarize.py", "start_estimates_summarize")
    assert (STUDY / "results.md").read_text() == summarize.report_text()


def test_the_summary_shows_every_run_with_an_estimator_of_its_own() -> None:
    summarize = load_script(STUDY / "summarize.py", "start_estimates_summarize")
    text = summarize.report_text()
    assert "flux-nodes-CTC-44051_60-K60-runtime-quantiles | >1h" in text
    assert "| slurm-nodes-SDSC-10800_80-K10-runtime-quantiles | 10min-1h | 48 | Slurm |" in text
