"""deploy/rush.service's sandbox, for real: rush imports, compiles and journals under it.

systemd cannot start units here (PID 1 is not systemd), so the test rebuilds what the unit's
``ProtectSystem=strict``, ``ProtectHome=yes`` and ``PrivateTmp=yes`` do with util-linux, in a
private mount namespace (``unshare --mount``): every mount read-only except the API file
systems, /tmp and the unit's writable directories (StateDirectory=, CacheDirectory=,
LogsDirectory=, RuntimeDirectory=, ReadWritePaths=, all read from the unit file, so a unit
regression breaks the test), home directories hidden, the process run as an unprivileged
user with only the unit's environment. Missing mount points (/var/lib/rush) are created in
an overlay on their top directory, so the host's file systems are not touched.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[2] / "deploy" / "rush.service"
RUSH = Path(sys.executable).with_name("rush")
NOBODY = 65534
# systemd's prefixes for the *Directory= settings.
DIRECTORY_ROOTS = {
    "StateDirectory": "/var/lib",
    "CacheDirectory": "/var/cache",
    "LogsDirectory": "/var/log",
    "RuntimeDirectory": "/run",
}

# A daemon cycle through the real core, against a queue held in memory (a fake: no RJMS here).
CYCLE = """
import sys
from rush.daemon.config import load_config
from rush.daemon.service import Daemon
from rush.rjms.base import ActionResult, ClusterState, RJMSBackend, RJMSJob

class FakeQueue(RJMSBackend):
    name = "fake"
    def read_state(self, partitions=()):
        jobs = (RJMSJob(1, "RUNNING", 0.0, 2, 600.0, start=10.0), RJMSJob(2, "PENDING", 5.0, 4, 300.0),
                RJMSJob(3, "PENDING", 6.0, 1, 60.0))
        return ClusterState(100.0, 4, 2, jobs)
    def set_priority(self, job_id, site_factor): return ActionResult(True)
    def hold(self, job_id): return ActionResult(True)
    def release(self, job_id): return ActionResult(True)
    def requeue(self, job_id, tags): return ActionResult(True)
    def submit(self, **kw): raise NotImplementedError
    def cancel(self, job_id): return ActionResult(True)

daemon = Daemon(load_config(sys.argv[1]), backend=FakeQueue())
report = daemon.run_cycle()
print("cycle", report.cycle, report.ok, report.error, sorted(report.decisions.items()))
"""


def service_settings(text: str) -> dict[str, list[str]]:
    """The [Service] section's settings, each with all its values (in order)."""
    settings: dict[str, list[str]] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line
            continue
        if section == "[Service]" and "=" in line:
            key, value = line.split("=", 1)
            settings.setdefault(key.strip(), []).append(value.strip())
    return settings


def writable_paths(settings: dict[str, list[str]]) -> list[str]:
    paths = []
    for key, root in DIRECTORY_ROOTS.items():
        for value in settings.get(key, []):
            paths += [f"{root}/{name}" for name in value.split()]
    for value in settings.get("ReadWritePaths", []):
        paths += [p.lstrip("-+") for p in value.split()]
    return sorted(set(paths))


def environment(settings: dict[str, list[str]]) -> dict[str, str]:
    env = {}
    for value in settings.get("Environment", []):
        for assignment in shlex.split(value):
            key, _, val = assignment.partition("=")
            env[key] = val
    return env


def sandbox_script(writable: list[str], binds: list[Path], config: Path, run: list[str]) -> str:
    """Shell commands run inside ``unshare --mount``: build the unit's view, then ``run``."""
    tops = sorted({"/" + Path(p).parts[1] for p in [*writable, "/etc/rush"]})
    work = binds[0].parent
    lines = ["set -eu"]
    for i, top in enumerate(tops):  # overlays: create mount points without touching the host
        upper, scratch = work / f"overlay{i}" / "upper", work / f"overlay{i}" / "work"
        lines += [
            f"mkdir -p {upper} {scratch}",
            f"mount -t overlay overlay -o lowerdir={top},upperdir={upper},workdir={scratch} {top}",
        ]
    lines += ["mkdir -p /etc/rush", f"cp {config} /etc/rush/rush.toml", "chmod 0644 /etc/rush/rush.toml"]
    for path, source in zip(writable, binds, strict=True):
        lines += [f"mkdir -p {path}", f"mount --bind {source} {path}"]
    # ProtectHome=yes: homes hidden. This machine's interpreter lives in a home (pyenv under
    # /root), so it alone is carried over, read-only; a real install is in /usr/local.
    interpreter = Path(sys.base_prefix).resolve()
    homes = [d for d in ("/home", "/root") if Path(d).is_dir()]
    carried = any(interpreter.is_relative_to(d) for d in homes)
    if carried:
        lines += [f"mkdir -p {work}/interpreter", f"mount --bind {interpreter} {work}/interpreter"]
    lines += [f"mount -t tmpfs -o mode=0755 tmpfs {d}" for d in homes]
    if carried:
        lines += [f"mkdir -p {interpreter}", f"mount --move {work}/interpreter {interpreter}"]
    # PrivateTmp=yes (after the binds and the move: their sources live under /tmp).
    lines += ["mount -t tmpfs -o mode=1777 tmpfs /tmp", "mount -t tmpfs -o mode=1777 tmpfs /var/tmp"]
    # ProtectSystem=strict: every other mount read-only (but /dev, /proc and /sys).
    keep = " ".join(shlex.quote(p) for p in [*writable, "/tmp", "/var/tmp"])
    lines.append(
        "for mp in $(awk '{print $5}' /proc/self/mountinfo | sort -u); do\n"
        "  case $mp in /proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue;; esac\n"
        f'  for k in {keep}; do [ "$mp" = "$k" ] && continue 2; done\n'
        '  mount -o remount,bind,ro "$mp"\n'
        "done"
    )
    lines.append("exec " + " ".join(shlex.quote(a) for a in run))
    return "\n".join(lines)


def unshare_usable() -> str | None:
    if shutil.which("unshare") is None or shutil.which("setpriv") is None:
        return "util-linux unshare/setpriv not installed"
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return f"unshare --mount is not permitted here: {probe.stderr.strip()}"
    return None


SANDBOX_CONFIG = (
    '[daemon]\njournal = "/var/lib/rush/journal.sqlite"\nmetrics_address = "127.0.0.1:0"\n'
    '[policy]\npolicy = "SPF"\n'
    # Connection refused at once: the CLI's cycle fails on the read, deterministically.
    '[rjms.options]\nrest_url = "http://127.0.0.1:1"\ntimeout = 2\n'
)


def run_in_sandbox(
    tmp_path: Path, settings: dict[str, list[str]], argv: list[str], config_text: str = SANDBOX_CONFIG
):
    writable = writable_paths(settings)
    binds = []
    for i, _ in enumerate(writable):
        source = tmp_path / "rw" / str(i)
        source.mkdir(parents=True, exist_ok=True)
        os.chown(source, NOBODY, NOBODY)  # systemd chowns these to User=
        binds.append(source)
    config = tmp_path / "rush.toml"
    config.write_text(config_text)
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/nonexistent",
        "LANG": "C.UTF-8",
        **environment(settings),
    }
    run = [
        "setpriv",
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        "env",
        "-i",
        *[f"{k}={v}" for k, v in env.items()],
        *argv,
    ]
    script = sandbox_script(writable, binds, config, run)
    out = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=900,
        cwd="/",
    )
    return out, dict(zip(writable, binds, strict=True))


@pytest.fixture
def unit() -> dict[str, list[str]]:
    reason = unshare_usable()
    if reason:
        pytest.skip(reason)
    settings = service_settings(UNIT.read_text())
    # The sandbox below models exactly these settings; a change needs the model updated.
    assert settings["ProtectSystem"] == ["strict"] and settings["ProtectHome"] == ["yes"]
    assert settings["PrivateTmp"] == ["yes"]
    return settings


def test_unit_derivation_of_writable_directories(unit):
    writable = writable_paths(unit)
    cache = environment(unit)["NUMBA_CACHE_DIR"]
    assert "/var/lib/rush" in writable and "/var/cache/rush" in writable
    # numba's cache must be inside a directory the unit makes writable.
    assert any(cache == p or cache.startswith(p + "/") for p in writable), (cache, writable)


def test_rush_imports_compiles_and_journals_under_the_unit_sandbox(unit, tmp_path):
    out, dirs = run_in_sandbox(tmp_path, unit, [sys.executable, "-c", CYCLE, "/etc/rush/rush.toml"])
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cycle 1 True" in out.stdout and "start" in out.stdout, out.stdout
    cache = Path(dirs["/var/cache/rush"]) / "numba"
    assert list(cache.rglob("*.nbi")), "numba wrote no cache index in NUMBA_CACHE_DIR"
    journal = Path(dirs["/var/lib/rush"]) / "journal.sqlite"
    with sqlite3.connect(journal) as db:
        assert db.execute("SELECT ok FROM cycles").fetchall() == [(1,)]

    # The CLI's --once under the same sandbox: the read fails (no RJMS), cleanly and journaled.
    out, _ = run_in_sandbox(
        tmp_path, unit, [str(RUSH), "daemon", "--config", "/etc/rush/rush.toml", "--once"]
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "cycle 2 (dry-run): failed" in out.stdout and "Traceback" not in out.stderr, out.stderr
    with sqlite3.connect(journal) as db:
        assert db.execute("SELECT cycle, ok FROM cycles ORDER BY cycle").fetchall() == [(1, 1), (2, 0)]


def test_the_sandbox_is_strict_enough_to_catch_a_missing_cache_dir(unit, tmp_path):
    """Without NUMBA_CACHE_DIR (the unit before the fix) importing the core fails here."""
    broken = {k: v for k, v in unit.items() if k not in ("Environment", "CacheDirectory")}
    out, _ = run_in_sandbox(tmp_path, broken, [sys.executable, "-c", "import rush.core.backfill"])
    assert out.returncode != 0 and "cannot cache function" in out.stderr, out.stdout + out.stderr


def test_a_journal_outside_the_writable_directories_is_a_clear_error(unit, tmp_path):
    """journal = /opt/... is read-only under ProtectSystem=strict: exit 2 naming the key."""
    config = SANDBOX_CONFIG.replace("/var/lib/rush/journal.sqlite", "/opt/rush/journal.sqlite")
    out, _ = run_in_sandbox(
        tmp_path, unit, [str(RUSH), "daemon", "--config", "/etc/rush/rush.toml", "--once"], config
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "cannot open the journal" in out.stderr and "daemon.journal" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
