"""Hostile comments for the Slurm job_submit plugin, run by the real Lua interpreter.

slurmctld is not started: the plugin's two entry points are called by ``lua5.3`` with a stub
``slurm`` table that records ``log_user``/``log_info`` (the plugin uses only those, the return
codes and ``job_desc``), so each case checks what Slurm would do with the job: accept it with
this AdminComment, pass it through untouched, or reject it with this message.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.slurm.lua_plugin import LUA, run_plugin

pytestmark = pytest.mark.skipif(LUA is None, reason="no Lua interpreter (apt install lua5.3)")


ACCEPT, REJECT, UNTOUCHED = "accept", "reject", "untouched"
BLANKS = " \t" * 20_000

# (id, comment, job name, outcome, AdminComment for "accept" / message part for "reject")
CASES = [
    ("flag", b"rush:idempotent", "lmp", ACCEPT, "rush:idempotent=1;app=lmp"),
    (
        "all-keys",
        b"rush:idempotent,app=lammps,wtype=network",
        "x",
        ACCEPT,
        "rush:idempotent=1;app=lammps;wtype=network",
    ),
    ("blanks-around", b"rush: app = lammps ,\twtype = io \n", "x", ACCEPT, "rush:app=lammps;wtype=io"),
    ("rush-alone", b"rush:", "lmp", ACCEPT, "rush:app=lmp"),
    ("rush-alone-no-name", b"rush:", None, ACCEPT, "rush:"),
    ("empty-items", b"rush:,,idempotent,,", "j", ACCEPT, "rush:idempotent=1;app=j"),
    ("only-commas", b"rush:" + b"," * 1000, "j", ACCEPT, "rush:app=j"),
    ("idempotent-yes", b"rush:idempotent=yes", "j", ACCEPT, "rush:idempotent=1;app=j"),
    (
        "name-sanitised",
        b"rush:idempotent",
        "a;class=large bé",
        ACCEPT,
        "rush:idempotent=1;app=a_class_large_b__",
    ),
    ("name-long", b"rush:wtype=io", "n" * 5000, ACCEPT, "rush:app=" + "n" * 128 + ";wtype=io"),
    ("blank-value-1023", b"rush:app=x" + b" " * 1013, "j", ACCEPT, "rush:app=x"),
    ("blank-run-inside-1023", b"rush:wtype=" + b" " * 1010 + b"io", "j", ACCEPT, "rush:app=j;wtype=io"),
    # The shape that made "(.-)%s*$" quadratic: blanks between two characters of a value.
    ("blanks-inside-value-1023", b"rush:app=a" + b" " * 1012 + b"b", "j", REJECT, "app must be letters"),
    ("exactly-1024", b"rush:app=" + b"a" * 1015, "j", ACCEPT, "rush:app=" + "a" * 1015),
    ("not-rush", b"my own note", "j", UNTOUCHED, None),
    ("not-rush-huge", b"x" * 1_000_000, "j", UNTOUCHED, None),
    ("upper-case-prefix", b"RUSH:idempotent", "j", UNTOUCHED, None),
    ("leading-blank-prefix", b" rush:idempotent", "j", UNTOUCHED, None),
    ("empty", b"", "j", UNTOUCHED, None),
    ("no-comment", None, "j", UNTOUCHED, None),
    ("long-blank-run", b"rush:app=a" + b" " * 40_000 + b"x", "j", REJECT, "more than Slurm's limit of 1024"),
    ("blank-tab-run", b"rush:wtype=" + BLANKS.encode() + b"io", "j", REJECT, "limit of 1024"),
    ("huge", b"rush:" + b"idempotent," * 200_000, "j", REJECT, "limit of 1024"),
    ("just-over-1024", b"rush:app=" + b"a" * 1016, "j", REJECT, "1025 characters"),
    (
        "many-options",
        b"rush:" + b",".join([b"idempotent"] * 90),
        "j",
        REJECT,
        "key 'idempotent' is given twice",
    ),
    ("duplicate-key", b"rush:wtype=io,wtype=compute", "j", REJECT, "key 'wtype' is given twice"),
    ("eq-without-key", b"rush:=5", "j", REJECT, "has no key before '='"),
    ("blank-key", b"rush:  =io", "j", REJECT, "has no key before '='"),
    ("nul-in-value", b"rush:app=a\x00b", "j", REJECT, "app must be letters"),
    ("nul-in-key", b"rush:idem\x00potent", "j", REJECT, "cannot read 'idem?potent'"),
    ("non-ascii-value", "rush:app=café".encode(), "j", REJECT, "app must be letters"),
    ("non-ascii-key", "rush:λ=1".encode(), "j", REJECT, "cannot read '??=1'"),
    ("latin1-bytes", b"rush:wtype=\xe9\xff", "j", REJECT, "wtype must be one of"),
    ("injection", b"rush:app=a;class=large", "j", REJECT, "app must be letters"),
    ("empty-app", b"rush:app=", "j", REJECT, "app must be letters"),
    ("flag-wtype", b"rush:wtype", "j", REJECT, "wtype must be one of"),
    ("idempotent-maybe", b"rush:idempotent=maybe", "j", REJECT, "idempotent takes no value"),
    ("idempotent-empty", b"rush:idempotent=", "j", REJECT, "idempotent takes no value"),
    ("unknown-key", b"rush:speed=fast", "j", REJECT, "unknown key 'speed'"),
    ("daemon-key", b"rush:class=large", "j", REJECT, "unknown key 'class'"),
    ("dash-key", b"rush:app-name=x", "j", REJECT, "cannot read 'app-name=x'"),
    ("nested-prefix", b"rush:rush:idempotent", "j", REJECT, "cannot read 'rush:idempotent'"),
    ("percent-format", b"rush:%s%s%n=1", "j", REJECT, "cannot read '%s%s%n=1'"),
    ("blank-item", b"rush:idempotent, ,wtype=io", "j", ACCEPT, "rush:idempotent=1;app=j;wtype=io"),
]


@pytest.mark.parametrize(
    ("comment", "name", "outcome", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_submit(tmp_path: Path, comment: bytes | None, name: str | None, outcome: str, expected: str | None):
    got = run_plugin(tmp_path, comment, name)
    if outcome == REJECT:
        assert got.rc == -1 and got.admin is None
        assert len(got.user) == 1 and expected in got.user[0], got.user
        assert "Example: --comment=rush:" in got.user[0]
        # The message quotes the comment printable and bounded: no NUL, no 40 000 blanks.
        assert b"\x00" not in got.raw and len(got.user[0]) < 400 and len(got.info[0]) < 400
    else:
        assert got.rc == 0 and got.user == [], got.user
        assert got.admin == expected


def test_over_long_comment_message(tmp_path: Path):
    """The controller rejects an over-long rush comment at once, saying why and how to fix it."""
    # 13 s of controller CPU in the backtracking pattern before the fix.
    got = run_plugin(tmp_path, b"rush:app=a" + b" " * 40_000 + b"x")
    assert got.rc == -1
    assert "rush: invalid --comment 'rush:app=" in got.user[0]
    assert "the comment is 40011 characters, more than Slurm's limit of 1024" in got.user[0]


MODIFY_CASES = [
    # (id, new comment, old AdminComment, expected AdminComment)
    (
        "keeps-daemon-keys",
        b"rush:wtype=io",
        b"rush:idempotent=1;class=large;requeues=2",
        "rush:app=job;wtype=io;class=large;requeues=2",
    ),
    ("old-not-rush", b"rush:wtype=io", b"site note", "rush:app=job;wtype=io"),
    (
        "old-huge-blanks",
        b"rush:wtype=io",
        b"rush:class=" + b" " * 200_000,
        "rush:app=job;wtype=io;class=" + " " * 200_000,
    ),
    (
        "old-garbage",
        b"rush:idempotent",
        b"rush:;;=;\x00=1;class;requeues=3",
        "rush:idempotent=1;app=job;requeues=3",
    ),
]


@pytest.mark.parametrize(
    ("comment", "old", "expected"), [c[1:] for c in MODIFY_CASES], ids=[c[0] for c in MODIFY_CASES]
)
def test_modify(tmp_path: Path, comment: bytes, old: bytes, expected: str):
    got = run_plugin(tmp_path, comment, old_admin=old)
    assert got.rc == 0 and got.admin == expected


def test_modify_rejects_over_long(tmp_path: Path):
    got = run_plugin(tmp_path, b"rush:" + b" " * 5000, old_admin=b"rush:class=large")
    assert got.rc == -1 and got.admin is None and "limit of 1024" in got.info[0]
