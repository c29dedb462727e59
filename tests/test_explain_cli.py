"""``rush explain`` / ``rush status`` from the command line, on a journal written by the daemon's
Journal: what they print, their stable --json keys, exit statuses, and that they write nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rush.planner.journal import JobRecord
from tests.planner.journal_query_data import T0, Decision, JournalContents, outputs, queue_row, write_journal
from tests.rush_cli import rush

EXPLAIN_KEYS = {
    "job_id", "row", "rank", "pending", "terms", "terms_error", "waits_behind", "record", "skips",
    "skip_predictions", "kills", "history", "history_rows", "history_omitted",
}  # fmt: skip
LINE_KEYS = {
    "action", "status", "mode", "reason", "answer", "value", "first_time", "last_time", "first_cycle",
    "last_cycle", "count", "model_outputs",
}  # fmt: skip
STATUS_KEYS = {
    "job_id",
    "user",
    "state",
    "priority",
    "rank",
    "estimated_start",
    "estimate_basis",
    "runtime_class",
    "skips",
}


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    queue = [
        queue_row(1, state="running", start=T0 - 100, estimate=600.0, user="carol"),
        queue_row(2, priority=10, fairshare=0.25, estimated_start=T0 + 500, estimate_basis="projection",
                  waits_behind=1, model_outputs=outputs(runtime_class="large", class_source="model")),
        queue_row(3, priority=20, user="bob"),
    ]  # fmt: skip
    decisions = [
        Decision(2, "hold", "predicted variable", status="done", outputs={"variable": True}, answer="held"),
        *[Decision(2, "skip", "still variable", status="done", time=T0 + k, cycle=k) for k in range(1, 40)],
        Decision(
            1, "kill", "predicted small but running 900 s >= divider 600 s", status="intent", value=900.0
        ),
    ]
    contents = JournalContents(
        queue, decisions, [JobRecord(2, skips=40, held_by_rush=True)], policy="LINEAR:fairshare=-100,r=1"
    )
    return write_journal(tmp_path_factory.mktemp("explain") / "journal.sqlite", contents)


def test_explain_text(journal: Path) -> None:
    out = rush("explain", "2", "--journal", str(journal))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for expected in (
        "owner        alice",
        "rank 2 of 2 pending",
        "policy       LINEAR:fairshare=-100,r=1",
        "term       fairshare = 0.25 x weight -100 = -25",
        "class        large (model)",
        "basis projection",
        "waits behind job 1 (running)",
        "skips        40 (held by rush now)",
        "squeue --start",
        "skip [done, apply]: still variable",
        "x39",
        "answer: held",
    ):
        assert expected in text, expected


def test_explain_json_keys_are_stable(journal: Path) -> None:
    out = rush("explain", "1", "--journal", str(journal), "--json")
    assert out.returncode == 0, out.stderr
    view = json.loads(out.stdout)
    assert set(view) == EXPLAIN_KEYS
    assert view["row"]["state"] == "running" and view["rank"] is None
    assert [h["action"] for h in view["kills"]] == ["kill"] and set(view["kills"][0]) == LINE_KEYS
    assert view["kills"][0]["status"] == "intent"


def test_status(journal: Path) -> None:
    out = rush("status", "--journal", str(journal), "--json")
    assert out.returncode == 0, out.stderr
    lines = json.loads(out.stdout)
    assert [(s["job_id"], s["rank"]) for s in lines] == [(3, 1), (2, 2), (1, None)]
    assert all(set(s) == STATUS_KEYS for s in lines)
    text = rush("status", "--journal", str(journal), "--user", "alice").stdout.splitlines()
    assert text[0].split()[:3] == ["JOB", "USER", "STATE"]
    assert [line.split()[0] for line in text[1:]] == ["2"]


def test_unknown_job_exit_1(journal: Path) -> None:
    out = rush("explain", "77", "--journal", str(journal))
    assert out.returncode == 1
    assert "job 77 is not in rush's journal" in out.stderr


def test_bad_paths_exit_2_and_corrupt_exit_3(tmp_path: Path) -> None:
    missing = rush("explain", "1", "--journal", str(tmp_path / "none.sqlite"))
    assert missing.returncode == 2 and "no journal here" in missing.stderr
    assert not (tmp_path / "none.sqlite").exists()
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"\x00garbage" * 1000)
    corrupt = rush("status", "--journal", str(garbage))
    assert corrupt.returncode == 3 and "corrupt or not SQLite" in corrupt.stderr
    both = rush("status", "--journal", "a", "--socket", "b")
    assert both.returncode == 2 and "not both" in both.stderr
    no_daemon = rush("status", "--socket", str(tmp_path / "q.sock"))
    assert no_daemon.returncode == 2 and "is the rush daemon running" in no_daemon.stderr


def test_nothing_written(journal: Path) -> None:
    files = sorted(journal.parent.iterdir())
    before = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    for argv in (("explain", "2"), ("status",), ("explain", "9")):
        rush(*argv, "--journal", str(journal))
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(journal.parent.iterdir())} == before
