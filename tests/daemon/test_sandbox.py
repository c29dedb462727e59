"""deploy/rush.service's sandbox, for real: rush imports, compiles and journals under it.

systemd cannot start units here (PID 1 is not systemd), so the test rebuilds what the unit's
``ProtectSystem=strict``, ``ProtectHome=yes`` and ``PrivateTmp=yes`` do with util-linux, in a
private mount namespace (``unshare --mount``): every mount read-only except the API file
systems, /tmp and the unit's writable directories (StateDirectory=, CacheDirectory=,
LogsDirectory=, RuntimeDirectory=, ReadWritePaths=, all read from the unit file, so a unit
regression breaks the test), home directories hidden, the process run as an unprivileged
user with only the unit's environment. Missing mount points (/var/lib/rush) are created in
an overlay on their top directory, so the host's file systems are not touched.

A checkout cloned under /tmp or a home directory (its .venv, and the interpreter that venv
points at) is hidden by ``PrivateTmp=`` and ``ProtectHome=``. The tests then run the unit with
the drop-in a site installing there writes (deploy/README.md): ``ProtectHome=tmpfs`` and
``BindReadOnlyPaths=`` for exactly those paths, modelled here as systemd applies it (sources
resolved before anything is hidden, bound read-only over the emptied directories).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "deploy" / "rush.service"
RUSH = Path(sys.executable).with_name("rush")
NOBODY = 65534
# systemd's prefixes for the *Directory= settings.
DIRECTORY_ROOTS = {
    "StateDirectory": "/var/lib",
    "CacheDirectory": "/var/cache",
    "LogsDirectory": "/var/log",
    "RuntimeDirectory": "/run",
}
# What ProtectHome= empties, and what PrivateTmp= replaces by private directories.
HOMES = ("/home", "/root", "/run/user")
PRIVATE_TMP = ("/tmp", "/var/tmp")
# Where this environment's packages come from (its site-packages and any .pth additions).
SITE_PATHS = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages") and Path(p).is_dir()]

# A daemon cycle through the real core, against a queue held in memory (a fake: no RJMS here).
CYCLE = """
import sys
from rush.planner.config import load_config
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


def hidden_by_the_sandbox(paths: Iterable[Path | str]) -> list[str]:
    """The paths (resolved) that ProtectHome= or PrivateTmp= hide, none inside another."""
    hidden = sorted(
        {
            str(Path(p).resolve())
            for p in paths
            if any(Path(p).resolve().is_relative_to(root) for root in (*HOMES, *PRIVATE_TMP))
        }
    )
    return [p for p in hidden if not any(p != q and Path(p).is_relative_to(q) for q in hidden)]


def checkout_dropin(paths: Iterable[Path | str]) -> dict[str, list[str]]:
    """The drop-in deploy/README.md gives a site whose rush lives where the unit's sandbox
    hides it: the homes emptied (tmpfs) rather than made inaccessible, so that systemd can
    create mount points in them, and the install's paths bound read-only. Empty when nothing
    is hidden (an install under /usr/local or /opt needs no drop-in)."""
    hidden = hidden_by_the_sandbox(paths)
    if not hidden:
        return {}
    return {"ProtectHome": ["tmpfs"], "BindReadOnlyPaths": [" ".join(hidden)]}


def with_dropin(settings: dict[str, list[str]], dropin: dict[str, list[str]]) -> dict[str, list[str]]:
    """``settings`` with a drop-in applied: a single-valued setting is replaced, a list grows."""
    merged = {key: list(values) for key, values in settings.items()}
    for key, values in dropin.items():
        merged[key] = merged.get(key, []) + values if key.endswith("Paths") else list(values)
    return merged


def read_only_binds(settings: dict[str, list[str]]) -> list[str]:
    """BindReadOnlyPaths= (``-`` for an optional source: dropped when it is absent)."""
    binds = []
    for value in settings.get("BindReadOnlyPaths", []):
        for path in value.split():
            optional, path = path.startswith("-"), path.lstrip("-")
            if ":" in path:  # SOURCE:DEST is not modelled; the tests bind paths in place
                raise ValueError(f"BindReadOnlyPaths={path}: only in-place binds are modelled")
            if optional and not Path(path).exists():
                continue
            if settings.get("ProtectHome") == ["yes"] and any(Path(path).is_relative_to(h) for h in HOMES):
                # systemd cannot create a mount point in an inaccessible home.
                raise ValueError(f"BindReadOnlyPaths={path} under a home needs ProtectHome=tmpfs")
            binds.append(path)
    return binds


def sandbox_script(
    writable: list[str], binds: list[Path], config: Path, run: list[str], read_only: Iterable[str] = ()
) -> str:
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
    # BindReadOnlyPaths=: systemd resolves the sources before it hides anything. Each is bound
    # first to a staging point in /etc's overlay (outside what is hidden below), then moved to
    # its place once the homes and /tmp are replaced.
    staged = [(f"/etc/.rush-bind-{i}", shlex.quote(path)) for i, path in enumerate(read_only)]
    for stage, path in staged:
        lines += [f"mkdir -p {stage}", f"mount --bind {path} {stage}"]
    # ProtectHome=: homes emptied (this sandbox cannot model "inaccessible": it runs as root).
    homes = [d for d in HOMES if Path(d).is_dir()]
    lines += [f"mount -t tmpfs -o mode=0755 tmpfs {d}" for d in homes]
    # PrivateTmp=yes (after the binds: their sources live under /tmp).
    lines += ["mount -t tmpfs -o mode=1777 tmpfs /tmp", "mount -t tmpfs -o mode=1777 tmpfs /var/tmp"]
    for stage, path in staged:
        lines += [f"mkdir -p {path}", f"mount --move {stage} {path}", f"rmdir {stage}"]
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


def unreadable_binds(paths: Iterable[str]) -> list[str]:
    """The bound paths the unit's user cannot enter: a bind keeps its root's own mode (a clone
    made 0700 stays closed to User= wherever it is bound, as under systemd)."""
    return [path for path in paths if os.stat(path).st_mode & 0o005 != 0o005]


def run_in_sandbox(
    tmp_path: Path, settings: dict[str, list[str]], argv: list[str], config_text: str = SANDBOX_CONFIG
):
    closed = unreadable_binds(read_only_binds(settings))
    if closed:
        pytest.skip(
            f"{', '.join(closed)} cannot be read by other users (mode 0700?): the unit's User= could "
            "not run rush from there under systemd either; deploy from a checkout others can read"
        )
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
    script = sandbox_script(writable, binds, config, run, read_only_binds(settings))
    out = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=900,
        cwd="/",
    )
    return out, dict(zip(writable, binds, strict=True))


@pytest.fixture
def unit_file() -> dict[str, list[str]]:
    """deploy/rush.service's settings as shipped (for an install the sandbox does not hide)."""
    reason = unshare_usable()
    if reason:
        pytest.skip(reason)
    settings = service_settings(UNIT.read_text())
    # The sandbox below models exactly these settings; a change needs the model updated.
    assert settings["ProtectSystem"] == ["strict"] and settings["ProtectHome"] == ["yes"]
    assert settings["PrivateTmp"] == ["yes"]
    return settings


@pytest.fixture
def unit(unit_file: dict[str, list[str]]) -> dict[str, list[str]]:
    """The unit for this checkout's environment: with the drop-in when the sandbox hides it (a
    clone under /tmp or a home; this machine's interpreter is pyenv's, under /root)."""
    return with_dropin(unit_file, checkout_dropin([REPO, sys.prefix, sys.base_prefix, *SITE_PATHS]))


@pytest.fixture(params=["tmp", "home"])
def hidden_venv(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A virtual environment importing this checkout, made where the sandbox hides it: under
    /tmp (PrivateTmp=) or under the home directory (ProtectHome=); removed afterwards."""
    if request.param == "tmp":
        root = Path("/tmp")
    else:
        root = Path.home().resolve()
        if not any(root.is_relative_to(home) for home in HOMES):
            pytest.skip(f"the home directory {root} is not one ProtectHome= hides ({', '.join(HOMES)})")
    parent = Path(tempfile.mkdtemp(prefix="rush-sandbox-", dir=root))
    try:
        venv = parent / "clone" / ".venv"
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True
        )
        purelib = subprocess.run(
            [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        # This checkout and the project environment's packages (numpy, numba...), as a clone's
        # own editable install would provide them.
        (Path(purelib) / "checkout.pth").write_text("".join(f"{p}\n" for p in [REPO, *SITE_PATHS]))
        yield venv
    finally:
        shutil.rmtree(parent, ignore_errors=True)


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


def test_a_checkout_the_sandbox_hides_runs_with_the_documented_dropin(unit_file, hidden_venv, tmp_path):
    """A clone under /tmp or a home: hidden by the shipped unit, run with deploy/README.md's
    drop-in (ProtectHome=tmpfs, BindReadOnlyPaths= for the checkout, venv and interpreter)."""
    python = str(hidden_venv / "bin" / "python")
    # The daemon's imports (numba, scikit-learn...; the whole cycle runs in the test above).
    argv = [python, "-c", "import rush.daemon.service as s, numba; print(s.__file__)"]
    out, _ = run_in_sandbox(tmp_path / "shipped", unit_file, argv)
    # env quotes the path with the locale's quotes (C.UTF-8: curly ones).
    assert out.returncode == 127 and python in out.stderr, out.stdout + out.stderr
    assert "No such file or directory" in out.stderr, out.stderr

    dropin = checkout_dropin([REPO, hidden_venv, sys.prefix, sys.base_prefix, *SITE_PATHS])
    assert str(hidden_venv) in dropin["BindReadOnlyPaths"][0].split(), dropin
    out, _ = run_in_sandbox(tmp_path / "dropin", with_dropin(unit_file, dropin), argv)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == str(REPO / "rush" / "daemon" / "service.py"), out.stdout
    # Bound read-only: the checkout cannot be changed from inside.
    probe = [python, "-c", f"open({str(hidden_venv / 'x')!r}, 'w')"]
    out, _ = run_in_sandbox(tmp_path / "probe", with_dropin(unit_file, dropin), probe)
    assert out.returncode != 0 and "Read-only file system" in out.stderr, out.stdout + out.stderr


def test_the_dropin_binds_only_what_is_hidden_and_needs_protecthome_tmpfs():
    assert checkout_dropin(["/usr/local/lib/rush", "/opt/rush/venv"]) == {}
    dropin = checkout_dropin(["/home/hpc/rush", "/home/hpc/rush/.venv", "/tmp/clone", "/usr/lib"])
    assert dropin == {"ProtectHome": ["tmpfs"], "BindReadOnlyPaths": ["/home/hpc/rush /tmp/clone"]}
    # With ProtectHome=yes the homes are inaccessible: systemd could not create the mount point.
    with pytest.raises(ValueError, match="needs ProtectHome=tmpfs"):
        read_only_binds({"ProtectHome": ["yes"], "BindReadOnlyPaths": ["/home/hpc/rush"]})
    assert read_only_binds(with_dropin({"ProtectHome": ["yes"]}, dropin)) == ["/home/hpc/rush", "/tmp/clone"]


def test_the_sandbox_is_strict_enough_to_catch_a_missing_cache_dir(unit, tmp_path):
    """Without NUMBA_CACHE_DIR (the unit before the fix) importing the core fails here."""
    broken = {k: v for k, v in unit.items() if k not in ("Environment", "CacheDirectory")}
    out, _ = run_in_sandbox(tmp_path, broken, [sys.executable, "-c", "import rush.core.scheduling_pass"])
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
