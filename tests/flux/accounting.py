"""flux-accounting for the Flux tests: a real DB and ``flux account-service`` per instance, two
associations in one bank (root, and userid OTHER through a jobspec signed "none" for that
userid: ../shared/vendor/README.md's ``signas``; such jobs cannot run here, no IMP)."""

from __future__ import annotations

import base64
import signal
import subprocess

import pytest

from rush.rjms.flux import association_fairshares
from tests.flux import instance
from tests.flux.instance import FluxInstance
from tests.flux.plugin_build import wait_for

CORES = 4
OTHER = 5011  # the second association's userid
SET = "job-manager.rush-priority.set"


def mf_priority_or_skip() -> None:
    why = instance.available()
    if why:
        pytest.skip(why)
    prefix = instance.flux_prefix()
    if not (prefix / "lib" / "flux" / "job-manager" / "plugins" / "mf_priority.so").exists():
        pytest.skip(f"flux-accounting is not installed in {prefix} (run .ci/vendor-flux.sh)")


class Accounting:
    """A flux-accounting DB and its service for one instance; root and OTHER in bankA."""

    def __init__(self, inst: FluxInstance) -> None:
        self.inst = inst
        self.db = str(inst.workdir / "FluxAccounting.db")
        self.log = inst.workdir / "account-service.log"
        self.service: subprocess.Popen | None = None

    def account(self, *argv: str) -> None:
        self.inst.run("account", *argv)

    def start(self, *plugins: tuple[str, ...]) -> Accounting:
        self.inst.run("account", "-p", self.db, "create-db")
        with open(self.log, "wb") as log:
            self.service = subprocess.Popen(
                [self.inst.flux, "account-service", "-p", self.db], env=self.inst.env(), stderr=log
            )
        wait_for(lambda: "registered accounting service" in self.log.read_text(errors="replace"))
        self.account("add-bank", "root", "1")
        self.account("add-bank", "--parent-bank=root", "bankA", "1")
        self.account("add-user", "--username=root", "--userid=0", "--bank=bankA")
        self.account("add-user", f"--username=user{OTHER}", f"--userid={OTHER}", "--bank=bankA")
        self.inst.run("jobtap", "load", "-r", ".priority-default", "mf_priority.so")
        for plugin in plugins:
            self.inst.run("jobtap", "load", *plugin)
        self.inst.run("account-priority-update", "-p", self.db)
        # root's usage: one real job, then the usage and fair-share recomputed and pushed.
        self.inst.run("run", "-n1", "--setattr=system.bank=bankA", "true")
        for step in ("account-fetch-job-records", "account-update-usage", "account-update-fshare"):
            self.inst.run(step, "-p", self.db)
        self.update()
        return self

    def update(self) -> None:
        self.inst.run("account-priority-update", "-p", self.db)

    def fairshares(self) -> dict[tuple[int, str], float]:
        return association_fairshares(
            self.inst.handle().rpc("job-manager.jobtap-query", {"name": "mf_priority.so"}).get()
        )

    def stop(self) -> None:
        if self.service is not None and self.service.poll() is None:
            self.service.send_signal(signal.SIGTERM)  # our own child, by its PID
            self.service.wait(timeout=30)


def priorities(inst: FluxInstance) -> dict[int, int]:
    """Every user's jobs' Flux priorities (``flux jobs -A``: OTHER's jobs too)."""
    out = inst.run("jobs", "-A", "--no-header", "-o", "{id.dec} {priority}").stdout
    return {int(a): int(b) for a, b in (line.split() for line in out.splitlines())}


def submit_root(inst: FluxInstance, limit: str) -> int:
    return inst.submit(f"-n{CORES}", "-t", limit, "--setattr=system.bank=bankA", "sleep", "0.2")


def submit_other(inst: FluxInstance, limit: str) -> int:
    """A job of userid OTHER: its jobspec signed "none" for that userid (README's signas)."""
    spec = inst.run(
        "run", "--dry-run", f"-n{CORES}", "-t", limit, "--setattr=system.bank=bankA", "true"
    ).stdout
    header = b"version\0i1\0userid\0i%d\0mechanism\0snone\0" % OTHER
    signed = f"{base64.b64encode(header).decode()}.{base64.b64encode(spec.encode()).decode()}.none"
    env = dict(inst.env(), FLUX_HANDLE_USERID=str(OTHER))
    out = subprocess.run(
        [inst.flux, "job", "submit", "--flags=signed"], input=signed, env=env, capture_output=True, text=True,
        check=True, timeout=60,
    )  # fmt: skip
    return int(inst.run("job", "id", "--to=dec", out.stdout.strip()).stdout.strip())
