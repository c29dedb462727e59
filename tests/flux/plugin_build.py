"""Build rush's jobtap priority plugin (plugins/flux/rush-priority.c) for the live-Flux tests,
and start instances that load it; helpers to read what Flux shows.

One build per session into a temp dir, named by the hash of the sources, with the same
``plugins/flux/build.sh`` an administrator runs. No flux-core development files (pkg-config,
headers): the caller skips with the script's reason.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests import polling
from tests.flux import instance
from tests.flux.instance import FluxInstance

CORES = 4  # one fake node; the tests' jobs take all of it, so they run one at a time

PLUGIN_DIR = instance.ROOT / "plugins" / "flux"
SOURCES = ("rush-priority.c", "build.sh")
NO_DEVELOPMENT_FILES = 3  # build.sh's exit status when pkg-config finds no flux-core


def source_hash() -> str:
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update((PLUGIN_DIR / name).read_bytes())
    return digest.hexdigest()[:16]


def build(outdir: Path) -> tuple[Path | None, str]:
    """(path of the built plugin, "") or (None, why it cannot be built here)."""
    why = instance.available()
    if why:
        return None, why
    # One directory per source version; the file keeps the name that flux jobtap lists.
    out = outdir / source_hash() / "rush-priority.so"
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        return out, ""
    env = dict(os.environ)
    prefix = instance.flux_prefix()
    if prefix is not None:  # the flux-core the instances run is the one to build against
        env["RUSH_FLUX_PREFIX"] = str(prefix)
    done = subprocess.run(
        ["sh", str(PLUGIN_DIR / "build.sh"), str(out)], capture_output=True, text=True, env=env, timeout=120
    )
    if done.returncode == NO_DEVELOPMENT_FILES:
        return None, done.stderr.strip()
    if done.returncode != 0:  # a compiler error is a bug in the plugin, not a missing component
        raise RuntimeError(f"plugins/flux/build.sh failed:\n{done.stdout}\n{done.stderr}")
    return out, ""


def plugin_or_skip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built plugin, shared by every test module of the session (one build per source hash)."""
    path, why = build(tmp_path_factory.getbasetemp() / "jobtap")
    if path is None:
        pytest.skip(f"cannot build the rush-priority jobtap plugin here: {why}")
    return path


def jobtap_config(plugin: Path, conf: str = "") -> str:
    """The instance configuration that loads the plugin in place of Flux's default priority."""
    extra = f", conf = {{ {conf} }}" if conf else ""
    return f'[job-manager]\nplugins = [{{ remove = ".priority-default", load = "{plugin}"{extra} }}]\n'


def start(workdir: Path, plugin: Path, conf: str = "", statedir: Path | None = None) -> FluxInstance:
    """A one-node instance running the plugin (``statedir``: its jobs survive a restart)."""
    attrs = {"statedir": str(statedir)} if statedir else None
    config = jobtap_config(plugin, conf)
    return FluxInstance(workdir, size=1, cores=CORES, config=config, attrs=attrs).start()


def wait_for(predicate, timeout: float = 30.0, step: float = 0.1):
    return polling.wait_for(predicate, timeout, step)


def priorities(inst: FluxInstance) -> dict[int, int]:
    """``flux jobs -o '{id} {priority}'`` for every job, as Flux shows it."""
    out = inst.run("jobs", "-a", "--no-header", "-o", "{id.dec} {priority}").stdout
    return {int(a): int(b) for a, b in (line.split() for line in out.splitlines())}


def site_factors(state) -> dict[int, int]:
    return {j.job_id: j.site_factor for j in state.jobs}


def urgencies(inst: FluxInstance) -> dict[int, int]:
    out = inst.run("jobs", "-a", "--no-header", "-o", "{id.dec} {urgency}").stdout
    return {int(a): int(b) for a, b in (line.split() for line in out.splitlines())}


def start_order(inst: FluxInstance, ids: list[int]) -> list[int]:
    for job_id in ids:
        inst.wait_job(job_id)
    t_run = {int(j["id"]): float(j["t_run"]) for j in inst.jobs() if int(j["id"]) in ids}
    return sorted(ids, key=t_run.__getitem__)


def query(inst: FluxInstance) -> dict:
    return json.loads(inst.run("jobtap", "query", "rush-priority.so").stdout)
