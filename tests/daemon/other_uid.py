"""rush run as another user (nobody, through setpriv), wherever the checkout and its venv are.

A clone in a home directory of mode 0700 (``~/rush`` of root) holds rush, its ``.venv`` and
the packages installed there where nobody cannot read them: nobody running the clone's
``.venv/bin/rush`` gets ``Permission denied``. :func:`install_for_nobody` copies what the
commands nobody runs import (rush and the third-party packages those commands load, found by
running them once as this user) into a fresh world-readable directory under /tmp, and picks
an interpreter of this Python version that nobody can run: this one's base interpreter, else
the system's. The copy is removed afterwards by the caller (:meth:`NobodyRush.remove`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"

# Runs rush's command line with ``argv`` as this user and prints where each top-level package
# it imported lies, the standard library's aside (the command may fail: its imports are the point).
_IMPORTS = """
import atexit, os, runpy, sys, sysconfig, traceback
from pathlib import Path

crashed = False


def report():
    # At exit, and with this script's own status: simulate, compare, explain and status end by
    # os._exit with the command's code once the atexit handlers have run.
    stdlib = {Path(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    for name in {name.partition(".")[0] for name in list(sys.modules)}:
        top = sys.modules.get(name)
        for place in [*getattr(top, "__path__", [])] or [getattr(top, "__file__", None)]:
            if not place:
                continue
            place = Path(place).resolve()
            if any(place.is_relative_to(root) for root in stdlib) and "site-packages" not in place.parts:
                continue
            print(place.parent if place.name == "__init__.py" else place)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1 if crashed else 0)  # the command's own exit code is not this listing's


atexit.register(report)
sys.argv = ["rush", *sys.argv[1:]]
try:
    runpy.run_module("rush", run_name="__main__")
except SystemExit:
    pass
except BaseException:
    traceback.print_exc()
    crashed = True
"""


@dataclass(frozen=True)
class NobodyRush:
    """rush's command line as nobody: ``python`` (nobody can run it) with ``site`` on its path."""

    python: str
    site: Path

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        # -s: no user site; PYTHONPATH is the copy only (the caller's points into the checkout).
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(self.site), "HOME": "/"}
        return subprocess.run(
            [*NOBODY, self.python, "-s", "-m", "rush", *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            cwd="/",
        )

    def remove(self) -> None:
        shutil.rmtree(self.site.parent, ignore_errors=True)


def _as_nobody(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NOBODY, *argv], capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"}, cwd="/"
    )


def nobody_python() -> tuple[str | None, str]:
    """An interpreter of this Python version that nobody can run with its standard library,
    and the reason when there is none."""
    base = getattr(sys, "_base_executable", sys.executable)
    candidates = [base, sys.executable, f"/usr/bin/python{VERSION}", f"/usr/local/bin/python{VERSION}"]
    probe = "import sys, json, socket, sqlite3, ssl; print('%d.%d' % sys.version_info[:2])"
    tried = []
    for python in dict.fromkeys(candidates):
        if not Path(python).exists():
            continue
        out = _as_nobody([python, "-s", "-c", probe])
        if out.returncode == 0 and out.stdout.strip() == VERSION:
            return python, ""
        tried.append(python)
    return None, (
        f"no Python {VERSION} that user nobody can run (tried {', '.join(tried)}): "
        f"install python{VERSION} system-wide"
    )


def install_for_nobody(commands: list[list[str]]) -> NobodyRush:
    """Copy rush and the packages ``commands`` (rush argument lists) import into a
    world-readable directory under /tmp; raise RuntimeError with the reason when nobody has no
    interpreter to run them (the caller skips)."""
    python, reason = nobody_python()
    if python is None:
        raise RuntimeError(reason)
    needed: set[Path] = set()
    for argv in commands:
        out = subprocess.run(
            [sys.executable, "-c", _IMPORTS, *argv], capture_output=True, text=True, timeout=120
        )
        if out.returncode != 0:
            raise RuntimeError(f"rush {' '.join(argv)} failed to import: {out.stderr[-2000:]}")
        needed.update(Path(line) for line in out.stdout.splitlines())
    parent = Path(tempfile.mkdtemp(prefix="rush-nobody-", dir="/tmp"))
    site = parent / "site"
    site.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for top in sorted(needed):
        if top.is_dir():
            shutil.copytree(top, site / top.name, ignore=ignore)
        else:
            shutil.copy2(top, site / top.name)
    # Readable by everyone whatever the checkout's umask was.
    for root, _dirs, files in os.walk(parent):
        os.chmod(root, 0o755)
        for name in files:
            os.chmod(os.path.join(root, name), 0o644)
    return NobodyRush(python, site)
