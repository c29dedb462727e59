"""Run the job_submit Lua plugin under a Lua interpreter with a stub slurm table."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

LUA = shutil.which("lua5.3") or shutil.which("lua5.1") or shutil.which("lua")


def run_plugin(
    tmp_path: Path, comment: bytes | None, name: str | None = "job", *, old_admin: bytes | None = None
) -> Outcome:
    driver = tmp_path / "driver.lua"
    driver.write_text(DRIVER)
    paths = []
    for label, data in (("comment", comment), ("old", old_admin)):
        if data is None:
            paths.append("-")
        else:
            (tmp_path / label).write_bytes(data)
            paths.append(str(tmp_path / label))
    mode = "submit" if old_admin is None else "modify"
    # A generous bound only so that a regression to a backtracking pattern fails instead of hanging.
    out = subprocess.run(
        [LUA, str(driver), str(PLUGIN), mode, paths[0], name or "-", paths[1]],
        capture_output=True,
        timeout=60,
        check=True,
    )
    lines = out.stdout.decode("latin-1").splitlines()
    fields = dict(line.split("=", 1) for line in lines[:2])
    admin = None if fields["admin"] == "nil" else fields["admin"]
    return Outcome(
        rc=int(fields["rc"]),
        admin=admin,
        user=[line[5:] for line in lines if line.startswith("user=")],
        info=[line[5:] for line in lines if line.startswith("info=")],
        raw=out.stdout,
    )


PLUGIN = Path(__file__).parents[2] / "plugins" / "slurm" / "job_submit_rush.lua"


# Reads the comment (and the old AdminComment on modification) from files, so NUL bytes and
# any other byte reach the plugin unchanged.
DRIVER = r"""
slurm = { SUCCESS = 0, ERROR = -1, user = {}, info = {} }
function slurm.log_user(fmt, ...) table.insert(slurm.user, string.format(fmt, ...)) end
function slurm.log_info(fmt, ...) table.insert(slurm.info, string.format(fmt, ...)) end
function slurm.log_debug(fmt, ...) end
dofile(arg[1])
local function slurp(path)
  if path == "-" then return nil end
  local fh = assert(io.open(path, "rb")); local text = fh:read("*a"); fh:close(); return text
end
local comment, name, old = slurp(arg[3]), arg[4] ~= "-" and arg[4] or nil, slurp(arg[5])
local job = { comment = comment, name = name }
local rc
if arg[2] == "modify" then
  rc = slurm_job_modify(job, { name = name, admin_comment = old }, {}, 1000)
else
  rc = slurm_job_submit(job, {}, 1000)
end
io.write("rc=", tostring(rc), "\n", "admin=", tostring(job.admin_comment), "\n")
for _, m in ipairs(slurm.user) do io.write("user=", m, "\n") end
for _, m in ipairs(slurm.info) do io.write("info=", m, "\n") end
"""


@dataclass
class Outcome:
    rc: int
    admin: str | None
    user: list[str]
    info: list[str]
    raw: bytes
