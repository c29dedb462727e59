"""sim/runtime_predictions/live_postfix.py: which kept runs it replays (the Flux runs made after
the replay's user-key fix, no earlier one, no Slurm run) and what it writes (the recomputation
itself needs each window's model: its figures are the committed tables', written by the script)."""

from __future__ import annotations

from pathlib import Path

from tests.script_module import load_script

ROOT = Path(__file__).resolve().parents[2]
script = load_script(ROOT / "sim" / "runtime_predictions" / "live_postfix.py", "live_postfix_study")


def _window(name: str):
    return next(w for w in script.live_windows.WINDOWS if w.name == name)


def _kept(tmp_path, monkeypatch, runs: dict[tuple[str, str], list[str]]) -> None:
    """Point live_windows at ``tmp_path`` holding only these kept runs: (window, run) -> sources."""
    lw = script.live_windows
    monkeypatch.setattr(lw, "RESULTS", tmp_path)
    monkeypatch.setattr(lw, "REPEATS", tmp_path / "repeats")
    monkeypatch.setattr(lw, "BEFORE_L2", tmp_path / "before_l2")
    for folder in ("repeats", "before_l2"):
        (tmp_path / folder).mkdir(exist_ok=True)
    for (name, rjms), sources in runs.items():
        stem = lw.csv_path(lw.RUNS[rjms][0], rjms, _window(name)).stem
        for source in sources:
            where = tmp_path / ("before_l2" if source == "before L2" else "repeats")
            suffix = "" if source == "before L2" else f"-{source}"
            (where / f"{stem}{suffix}.csv").write_text(source)


def test_only_the_flux_runs_from_the_first_after_the_fix_on_are_replayed(tmp_path, monkeypatch):
    _kept(
        tmp_path,
        monkeypatch,
        {
            ("KTH", "flux"): ["before L2", "rep1", "rep2", "rep3", "rep4", "rep10"],
            ("KTH", "slurm"): ["rep1", "rep5"],  # Slurm replays carry no user tag
            ("CTC", "fluxion"): ["rep5", "rep6"],
            ("BLUE", "flux"): ["rep3"],  # every kept run before the fix
        },
    )
    runs = script.post_fix_runs()
    assert [(w.name, rjms, source) for w, rjms, _, source in runs] == [
        ("CTC", "fluxion", "rep6"),
        ("KTH", "flux", "rep3"),
        ("KTH", "flux", "rep4"),
        ("KTH", "flux", "rep10"),
    ]
    assert all(path.read_text() == source for _, _, path, source in runs)


def test_every_first_run_after_the_fix_is_a_committed_run_and_the_one_before_it_too():
    lw = script.live_windows
    assert {rjms for _, rjms in script.POST_FIX} == {"flux", "fluxion"}
    for (name, rjms), first in script.POST_FIX.items():
        w = _window(name)
        kept = dict(lw.repeat_sources(lw.RUNS[rjms][0], rjms, w))
        assert f"rep{first}" in kept, (name, rjms)
        assert f"rep{first - 1}" in kept or "before L2" in kept, (name, rjms)


def test_both_tables_are_written_on_the_runs_after_the_fix(tmp_path, monkeypatch):
    _kept(tmp_path, monkeypatch, {("SDSC", "fluxion"): ["rep1", "rep2"]})
    written = {}
    monkeypatch.setattr(
        script.live_bias, "run_rows", lambda m, w, r, p, s: [{"window": w.name, "run": r, "source": s}]
    )
    monkeypatch.setattr(script.live_same_moment, "run_rows", lambda m, w, r, p, s: [{"window": w.name, "run": r, "source": s, "same": 1}])  # fmt: skip
    monkeypatch.setattr(script.live_bias, "markdown", lambda rows: f"bias {len(rows)}\n")
    monkeypatch.setattr(script.live_same_moment, "markdown", lambda rows: f"same {len(rows)}\n")
    monkeypatch.setattr(script.live_bias, "write_results", lambda stem, rows, text: written.update({stem: (rows, text)}))  # fmt: skip
    assert script.main(["--models", str(tmp_path / "models")]) == 0
    assert sorted(written) == ["live_bias_postfix", "live_same_moment_postfix"]
    assert written["live_bias_postfix"] == (
        [{"window": "SDSC", "run": "fluxion", "source": "rep2"}],
        script.NOTE + "bias 1\n",
    )
    assert written["live_same_moment_postfix"][0][0]["same"] == 1
    assert written["live_same_moment_postfix"][1].endswith("same 1\n")
