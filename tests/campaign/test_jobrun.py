"""What a control job runs (rush/campaign/jobrun.py), as a process: its MPI session directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rush.campaign import jobrun
from rush.collect.mpi_session import SESSION_DIR_KEYS

# The "application": reports the session directory base it was given and whether it exists.
APP = (
    "import json, os; base = os.environ.get('OMPI_MCA_orte_tmpdir_base'); "
    "print(json.dumps({'format': 'rush-proxy/1', 'base': base, 'exists': bool(base) and os.path.isdir(base), "
    "'prte': os.environ.get('PRTE_MCA_prte_tmpdir_base')}))"
)


def run_job(tmp_path: Path, env: dict[str, str]) -> dict:
    spec = {
        "tag": "00000-t",
        "app": [sys.executable, "-c", APP],
        "result": str(tmp_path / "r.json"),
        "env": env,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    clean = {k: v for k, v in os.environ.items() if k not in SESSION_DIR_KEYS}
    done = subprocess.run(
        [sys.executable, jobrun.__file__, str(tmp_path / "spec.json")],
        env=clean,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "r.json").read_text())["app"]


def test_each_job_gets_its_own_mpi_session_directory_and_removes_it(tmp_path: Path) -> None:
    first, second = run_job(tmp_path, {}), run_job(tmp_path, {})
    assert first["exists"] and second["exists"]
    assert first["base"] != second["base"]  # two jobs on one node never share /tmp/ompi.<host>.<uid>
    assert first["prte"] == first["base"]  # OpenMPI 5 (PRRTE) reads its own key
    assert not Path(first["base"]).exists() and not Path(second["base"]).exists()


def test_a_site_setting_is_kept(tmp_path: Path) -> None:
    site = tmp_path / "site-tmp"
    site.mkdir()
    app = run_job(tmp_path, {"OMPI_MCA_orte_tmpdir_base": str(site)})
    assert app["base"] == str(site) and app["prte"] is None
    assert site.is_dir()  # the site's directory is not rush's to remove
