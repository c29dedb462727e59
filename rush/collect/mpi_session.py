"""A private OpenMPI session directory for one job's MPI launches.

    python3 mpi_session.py COMMAND [ARG...]

Every ``mpirun`` on a node shares OpenMPI's session directory ``/tmp/ompi.<host>.<uid>`` by
default, and two starting while a third cleans up race on it ("mkdir /tmp/ompi.vm.0: File
exists", ``orte_init`` fails): seen with two jobs on one node. The rule, one for every job rush
submits (the campaign's control jobs, ``rush/campaign/jobrun.py``; the probe jobs of
``rush probe submit``, which run COMMAND through this file): the job's launches get a session
directory base of their own (``OMPI_MCA_orte_tmpdir_base``, and ``PRTE_MCA_prte_tmpdir_base``
for OpenMPI 5) under ``TMPDIR``, removed when the job ends; a site that sets either key keeps
its own setting.

Run as a program, it runs COMMAND under the rule and exits with its status (128 + N when
signal N ended it); SIGTERM, SIGINT and SIGHUP (an RJMS cancelling or timing out the job) are
passed to COMMAND and the directory is still removed.

Standard library only: it runs on compute nodes that may not have rush installed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile

# OpenMPI's session directory base (4.x: orte; 5.x: PRRTE).
SESSION_DIR_KEYS = ("OMPI_MCA_orte_tmpdir_base", "PRTE_MCA_prte_tmpdir_base")
PASSED_ON = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def private_session_dir(env: dict[str, str]) -> str | None:
    """Give this job's MPI launches a session directory base of their own, unless the site
    set one; return it (to remove at the end), or None."""
    if any(key in env for key in SESSION_DIR_KEYS):
        return None
    path = tempfile.mkdtemp(prefix="rush-mpi-", dir=env.get("TMPDIR") or None)
    env.update(dict.fromkeys(SESSION_DIR_KEYS, path))
    return path


def run(command: list[str]) -> int:
    """COMMAND's exit status, run with a private session directory removed afterwards."""
    env = dict(os.environ)
    session_dir = private_session_dir(env)
    child: subprocess.Popen[bytes] | None = None
    early: list[int] = []  # signals before COMMAND started: passed on once it has

    def pass_on(received: int, _frame: object) -> None:
        if child is None:
            early.append(received)
        else:
            child.send_signal(received)

    try:
        for signum in PASSED_ON:
            signal.signal(signum, pass_on)
        try:
            child = subprocess.Popen(command, env=env)
        except OSError as exc:
            print(f"mpi_session.py: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
            return 127
        for signum in early:
            child.send_signal(signum)
        code = child.wait()
        return 128 - code if code < 0 else code
    finally:
        if session_dir:
            shutil.rmtree(session_dir, ignore_errors=True)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: mpi_session.py COMMAND [ARG...]", file=sys.stderr)
        return 2
    return run(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
