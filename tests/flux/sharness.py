"""flux-core's own scheduler conformance test, ``t/t2307-sched-backfill.t``, run with rush's
module in place of ``sched-backfill`` against the installed flux (issue 20, "Done means").

How it runs (nothing of flux-core is built here):

* the sharness driver and the test are taken from the vendored flux-core tarball
  (``../shared/vendor/flux-core-*.tar.gz``, the source the installed flux was built from):
  ``t/sharness.sh``, ``t/sharness.d/``, ``t/rc/``, ``t/scripts/`` and the ``.t`` file, into a
  temp dir;
* sharness is pointed at the installed flux with ``FLUX_TEST_INSTALLED_PATH`` (its
  ``01-setup.sh`` puts that ``bin/`` first on PATH) and ``FLUX_SOURCE_DIR`` (the extracted tree;
  ``test_under_flux 4 job`` reads ``t/rc/rc1-job.py`` from it). ``01-setup.sh`` also runs
  ``$FLUX_BUILD_DIR/src/cmd/flux env`` for PYTHONPATH, so ``FLUX_BUILD_DIR`` is a temp dir
  whose ``src/cmd/flux`` is a symlink to the installed ``flux``;
* rush's module is found by name: ``FLUX_MODULE_PATH_PREPEND`` is ``rush/flux_module`` (where
  ``sched-rush.py`` lives), and ``FLUX_PYTHONPATH_PREPEND`` lets the broker's Python import
  rush, as in tests/flux/instance.py.

What is substituted in the copy of the test (:func:`substitute`), and nothing else:

* ``flux module load|unload|remove|reload sched-backfill`` -> the same command on
  ``sched-rush``;
* ``load`` and ``reload`` get ``$RUSH_SCHED_ARGS`` appended (``config=`` a rush.toml with the
  module's default configuration: only the journal's path, beside it, and the Flux backend; so
  FCFS, EASY backfill and Flux's priority first, ``policy.rjms_priority = "first"``), so
  ``flux module load sched-backfill queue-depth=bogus`` becomes
  ``flux module load sched-rush $RUSH_SCHED_ARGS queue-depth=bogus``.

The test names (``sched-backfill: ...``) are left as they are so that results can be read
against the original file.
"""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.flux.instance import ROOT, flux_prefix, python_path

# ../shared/vendor of the checkout (of /work/main; a worktree under /work/wt/ looks one level up).
VENDOR = next(
    (p / "shared" / "vendor" for p in ROOT.parents if (p / "shared" / "vendor").is_dir()),
    ROOT.parent / "shared" / "vendor",
)
TEST_NAME = "t2307-sched-backfill.t"
# What the sharness driver needs besides the test itself.
NEEDED = ("t/sharness.sh", "t/sharness.d/", "t/rc/", "t/scripts/", f"t/{TEST_NAME}")
MODULE_DIR = ROOT / "rush" / "flux_module"
MODULE_COMMAND = re.compile(r"flux module (load|unload|remove|reload) sched-backfill\b")
TAP_LINE = re.compile(r"^(ok|not ok) (\d+) - (.*?)(?: # (TODO|SKIP).*)?$")
CASE_LINE = re.compile(r"^test_expect_success '([^']*)'", re.MULTILINE)


def tarball() -> Path | None:
    found = sorted(VENDOR.glob("flux-core-*.tar.gz"))
    return found[-1] if found else None


def unavailable() -> str | None:
    """None when the conformance test can run here, else why not (the skip reason)."""
    if flux_prefix() is None:
        return "no flux-core installed (.ci/vendor-flux.sh)"
    if tarball() is None:
        return f"no vendored flux-core tarball in {VENDOR} (the conformance test comes from it)"
    return None


def original_test() -> str:
    """The text of t2307 as flux-core ships it."""
    path = tarball()
    assert path is not None
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            if member.name.endswith(f"/t/{TEST_NAME}"):
                data = tar.extractfile(member)
                assert data is not None
                return data.read().decode()
    raise FileNotFoundError(f"{TEST_NAME} not in {path}")


def case_names() -> list[str]:
    """The test cases of t2307, in order (their TAP numbers are index + 1)."""
    return CASE_LINE.findall(original_test())


def substitute(text: str) -> str:
    """sched-backfill -> sched-rush in module commands; rush's arguments on load/reload."""

    def swap(match: re.Match[str]) -> str:
        verb = match.group(1)
        args = " $RUSH_SCHED_ARGS" if verb in ("load", "reload") else ""
        return f"flux module {verb} sched-rush{args}"

    return MODULE_COMMAND.sub(swap, text)


def rush_config(directory: Path) -> Path:
    """The module's default configuration (nothing set but where the journal goes): FCFS,
    EASY backfill, Flux's priority first (``policy.rjms_priority = "first"``: highest first, the
    policy among equal ones, as sched-backfill orders by priority then job id)."""
    path = directory / "rush.toml"
    path.write_text(f'[daemon]\njournal = "{directory / "journal.sqlite"}"\n\n[rjms]\nbackend = "flux"\n')
    return path


def extract(workdir: Path) -> Path:
    """The sharness tree from the vendored tarball under ``workdir``; returns its top dir."""
    path = tarball()
    assert path is not None
    with tarfile.open(path) as tar:
        members = []
        for member in tar.getmembers():
            _, _, inner = member.name.partition("/")
            if any(inner == n or (n.endswith("/") and inner.startswith(n)) for n in NEEDED):
                members.append(member)
        tar.extractall(workdir, members=members, filter="data")
        top = workdir / members[0].name.split("/")[0]
    return top


@dataclass(frozen=True)
class CaseResult:
    number: int
    name: str
    ok: bool


@dataclass(frozen=True)
class Run:
    results: dict[int, CaseResult]
    output: str
    returncode: int
    journal: Path
    log: Path  # the test instance's broker log (kept: the test runs with --debug)

    def broker_log(self, lines: int = 80) -> str:
        if not self.log.exists():
            return "(no broker log)"
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join([line for line in text if ".debug[" not in line][-lines:])

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


def run_conformance(workdir: Path, scheduler: str = "sched-rush", timeout: float = 600) -> Run:
    """Run t2307 under the installed flux with ``scheduler`` (``sched-rush``: rush's module,
    substituted as the module docstring says; ``sched-backfill``: the unmodified test)."""
    prefix = flux_prefix()
    assert prefix is not None
    top = extract(workdir)
    test = top / "t" / TEST_NAME
    if scheduler == "sched-rush":
        test.write_text(substitute(test.read_text()))
    build = workdir / "build"
    (build / "src" / "cmd").mkdir(parents=True)
    (build / "src" / "cmd" / "flux").symlink_to(prefix / "bin" / "flux")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLUX_")}
    env.update(
        FLUX_TEST_INSTALLED_PATH=str(prefix / "bin"),
        FLUX_BUILD_DIR=str(build),
        FLUX_SOURCE_DIR=str(top),
        FLUX_MODULE_PATH_PREPEND=str(MODULE_DIR),
        FLUX_PYTHONPATH_PREPEND=python_path(),
        RUSH_SCHED_ARGS=f"config={rush_config(workdir)}",
    )
    # -v: each case's commands and output; -d: the broker log and trash dir are kept.
    proc = subprocess.run(
        ["sh", f"./{TEST_NAME}", "-v", "-d"],
        cwd=top / "t",
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = proc.stdout + proc.stderr
    results = {}
    for line in proc.stdout.splitlines():
        match = TAP_LINE.match(line)
        if match:
            number = int(match.group(2))
            results[number] = CaseResult(number, match.group(3), match.group(1) == "ok")
    log = top / "t" / TEST_NAME.replace(".t", ".broker.log")
    return Run(results, output, proc.returncode, workdir / "journal.sqlite", log)


def case_log(run: Run, number: int) -> str:
    """The verbose output of one case (from its 'expecting success' to its TAP line)."""
    lines = run.output.splitlines()
    end = next((i for i, line in enumerate(lines) if re.match(rf"^(not )?ok {number} - ", line)), None)
    if end is None:
        return ""
    start = max((i for i in range(end) if lines[i].startswith("expecting success")), default=0)
    return "\n".join(lines[start : end + 1])


if __name__ == "__main__":  # a manual run: python -m tests.flux.sharness [sched-backfill]
    import sys

    with tempfile.TemporaryDirectory() as tmp:
        run = run_conformance(Path(tmp), *(sys.argv[1:2] or ["sched-rush"]))
        for case in run.results.values():
            print(f"{'ok' if case.ok else 'FAIL'} {case.number} {case.name}")
        failed = [c.number for c in run.results.values() if not c.ok]
        for number in failed:
            print(f"\n--- case {number} ---\n{case_log(run, number)}")
