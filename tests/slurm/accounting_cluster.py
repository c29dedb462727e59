"""A real Slurm with accounting on localhost: MariaDB, slurmdbd, slurmctld and slurmd, of either
install (Debian's 22.05 with one node; the vendored 25.11 with :data:`ACCOUNTING_NODES`, two
slurmd of 2 CPUs each, so that its fair-share runs on a multi-node cluster).

:class:`AccountingCluster` is :class:`tests.slurm.cluster.SlurmCluster` (its munge, ports,
temporary directory, client helpers and tear-down) with accounting and fair-share on:

* MariaDB: ``mariadb-install-db`` into a fresh datadir, then ``mariadbd`` on a free TCP port
  (127.0.0.1 only) and its own socket, ``--skip-grant-tables`` (nobody else can reach it;
  slurmdbd needs no user of its own);
* slurmdbd of the same install (``-D``, foreground; 25.11's needs the vendored build's
  ``accounting_storage/mysql``, built when the MariaDB client headers are present) with its own slurmdbd.conf beside slurm.conf (slurmdbd reads
  it from SLURM_CONF's directory): ``accounting_storage/mysql`` on that port, a free DbdPort;
* slurm.conf as the shared clusters', except ``AccountingStorageType=accounting_storage/slurmdbd``
  with ``AccountingStorageEnforce=associations`` and priority/multifactor weighing fair-share
  only (:data:`FAIRSHARE_WEIGHT`), ``PriorityDecayHalfLife`` of an hour and
  ``PriorityCalcPeriod=1`` (minutes: Slurm's smallest; usage reaches the factors at most a
  minute after a job ran);
* the cluster, two accounts ``acct_a`` and ``acct_b`` of equal shares and root in both, added
  with ``sacctmgr -i`` before slurmctld starts (it registers with slurmdbd at start).

Every daemon runs in its own session as a child of the test process and is stopped by its PID.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.slurm.cluster import DEBIAN, NodeLayout, SlurmCluster, SlurmInstall, free_port

MARIADBD = Path("/usr/sbin/mariadbd")
INSTALL_DB = Path("/usr/bin/mariadb-install-db")
# 25.11's multi-node accounting cluster: 4 CPUs on two nodes, so a job of -n 4 fills the
# partition as on 22.05's single node.
ACCOUNTING_NODES = NodeLayout(
    nodes=("a1", "a2"),
    cpus=2,
    memory_mb=512,
    partitions=(("acct", "a[1-2]", True),),
    gpu_nodes=(),
    drained=(),
    switches=(("s1", "a[1-2]"),),
)
ACCOUNTS = ("acct_a", "acct_b")
# PriorityWeightFairshare: large against the priority_weight the tests give rush.
FAIRSHARE_WEIGHT = 100_000


def accounting_available(install: SlurmInstall = DEBIAN) -> str | None:
    """None when the accounting cluster can run here on ``install``, else the reason to skip."""
    reason = install.available()
    if reason:
        return reason
    for path in (MARIADBD, INSTALL_DB):
        if not path.exists():
            return f"{path} is not installed (.ci/install-deps.sh installs mariadb-server)"
    for path in (install.sbin / "slurmdbd", install.bin / "sacctmgr", install.bin / "sshare"):
        if not path.exists():
            fix = "apt-get install slurmdbd" if not install.vendored else "run .ci/vendor-slurm.sh"
            return f"Slurm {install.name}: {path} is not installed ({fix})"
    if not (install.plugin_dir / "accounting_storage_mysql.so").exists():
        if install.vendored:
            return (
                f"Slurm {install.name} was built without accounting_storage/mysql (no MariaDB client "
                "headers at build time): apt-get install default-libmysqlclient-dev, then rebuild with .ci/vendor-slurm.sh"
            )
        return "Slurm's accounting_storage/mysql plugin is missing (apt-get install slurmdbd)"
    return None


class AccountingCluster(SlurmCluster):
    """One localhost Slurm with slurmdbd and MariaDB; see the module docstring."""

    def __init__(self, workdir: Path, cpus: int = 4, install: SlurmInstall = DEBIAN) -> None:
        # No job_submit plugin: rush's tags are not what these tests look at. 25.11 runs
        # several nodes (its build has --enable-multiple-slurmd), 22.05 one.
        layout = ACCOUNTING_NODES if install.vendored else None
        super().__init__(workdir, cpus=cpus, job_submit_lua=None, install=install, layout=layout)
        self.dbd_conf = self.dir / "slurmdbd.conf"
        self.db_dir = self.dir / "mysql"
        self.db_socket = self.dir / "mysqld.sock"
        self._accounting_up = False

    def _write_config(self) -> None:
        super()._write_config()
        self.db_port, self.dbd_port = free_port(), free_port()
        replaced = {
            "AccountingStorageType=accounting_storage/none": [
                "AccountingStorageType=accounting_storage/slurmdbd",
                "AccountingStorageHost=127.0.0.1",
                f"AccountingStoragePort={self.dbd_port}",
                "AccountingStorageEnforce=associations",
                # The munge socket for slurmdbd connections (Slurm's default is the system's).
                f"AccountingStoragePass={self.munge_socket}",
            ],
            "PriorityWeightFairshare=0": [
                f"PriorityWeightFairshare={FAIRSHARE_WEIGHT}",
                "PriorityDecayHalfLife=0-1",
                "PriorityCalcPeriod=1",
            ],
        }
        lines = []
        for line in self.conf.read_text().splitlines():
            lines += replaced.get(line, [line])
        self.conf.write_text("\n".join(lines) + "\n")
        self.dbd_conf.write_text(
            "\n".join(
                [
                    "AuthType=auth/munge",
                    f"AuthInfo=socket={self.munge_socket}",
                    "DbdHost=localhost",
                    "DbdAddr=127.0.0.1",
                    f"DbdPort={self.dbd_port}",
                    "SlurmUser=root",
                    f"PidFile={self.dir / 'slurmdbd.pid'}",
                    f"LogFile={self.dir / 'log' / 'slurmdbd.log'}",
                    "DebugLevel=info",
                    "StorageType=accounting_storage/mysql",
                    "StorageHost=127.0.0.1",
                    f"StoragePort={self.db_port}",
                    "StorageUser=root",
                    "StorageLoc=slurm_acct_db",
                ]
            )
            + "\n"
        )
        self.dbd_conf.chmod(0o600)  # slurmdbd refuses a config others can read

    def start_slurmctld(self, timeout: float = 60.0) -> None:
        """The database, slurmdbd and the associations first (once), then slurmctld."""
        if not self._accounting_up:
            self._start_accounting(timeout)
            self._accounting_up = True
        super().start_slurmctld(timeout)

    def _start_accounting(self, timeout: float) -> None:
        self.db_dir.mkdir()
        install = subprocess.run(
            [str(INSTALL_DB), "--no-defaults", f"--datadir={self.db_dir}", "--user=root", "--skip-test-db"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if install.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed: {install.stderr[-2000:]}")
        self._spawn(
            "mariadbd",
            [
                str(MARIADBD),
                "--no-defaults",
                f"--datadir={self.db_dir}",
                f"--socket={self.db_socket}",
                f"--port={self.db_port}",
                "--bind-address=127.0.0.1",
                "--user=root",
                "--skip-grant-tables",
                f"--pid-file={self.dir / 'mysqld.pid'}",
                f"--log-error={self.dir / 'log' / 'mariadbd.log'}",
                "--innodb-buffer-pool-size=64M",
                "--innodb-lock-wait-timeout=900",
            ],
        )
        self._wait(self.db_socket.exists, timeout, "mariadbd socket")
        self._spawn("slurmdbd", [str(self.sbin / "slurmdbd"), "-D"])
        self._wait(self._dbd_answers, timeout, "slurmdbd")
        sacctmgr = self.tool("sacctmgr")
        self.run(sacctmgr, "-i", "add", "cluster", "rushtest")
        self.run(sacctmgr, "-i", "add", "account", *ACCOUNTS, "Cluster=rushtest", "Fairshare=1")
        self.run(sacctmgr, "-i", "add", "user", "root", f"Account={','.join(ACCOUNTS)}", "Fairshare=1")

    def _dbd_answers(self) -> bool:
        out = self.run(self.tool("sacctmgr"), "-n", "-P", "list", "cluster", check=False, timeout=10)
        return out.returncode == 0

    def shares(self) -> dict[tuple[str, str], tuple[float, float]]:
        """(account, user) -> (RawUsage, FairShare) of every user association, from sshare."""
        out = self.run(self.tool("sshare"), "-P", "-n", "-a", "-o", "Account,User,RawUsage,FairShare")
        rows = {}
        for line in out.stdout.splitlines():
            account, user, usage, factor = (part.strip() for part in line.split("|"))
            if user:
                rows[(account, user)] = (float(usage or 0), float(factor or "nan"))
        return rows

    def sprio(self) -> dict[int, tuple[int, float, int]]:
        """Job id -> (priority, normalised fair-share factor, site factor) from sprio."""
        out = self.run(self.tool("sprio"), "-h", "-o", "%i %Y %f %S")
        return {
            int(job): (int(priority), float(fairshare), int(site))
            for job, priority, fairshare, site in (line.split() for line in out.stdout.splitlines())
        }

    def stop_slurmdbd(self) -> None:
        """Stop slurmdbd (by its PID), leaving slurmctld and the database running."""
        self._stop("slurmdbd")

    def stop(self) -> None:
        super().stop()
        for name in ("slurmdbd", "mariadbd"):
            self._stop(name)
        shutil.rmtree(self.db_dir, ignore_errors=True)
