#!/usr/bin/env bash
# Make Slurm 25.11 available to the tests beside Debian's 22.05: build it from ../shared/vendor
# (build-slurm.sh: slurmctld, slurmd, slurmrestd with data_parser v0.0.41..v0.0.44, job_submit/lua,
# auth/jwt, slurmdbd with accounting_storage/mysql (the fair-share tests), headers and libslurm for pyslurm) when it is missing. Cached by the vendored script:
# about 5-8 min on 2 cores the first time, under a second after.
#
# Usage:  .ci/vendor-slurm.sh          Prints the prefix on its last line (RUSH_SLURM_25_PREFIX,
#                                      default /opt/slurm-25.11, as tests/slurm/cluster.py reads it).
# Without ../shared/vendor it builds nothing and exits 0: the 25.11 tests skip with that reason.
set -euo pipefail
cd "$(dirname "$0")/.."
vendor="$(cd .. && pwd)/shared/vendor"
prefix="${RUSH_SLURM_25_PREFIX:-/opt/slurm-25.11}"

if [ ! -x "$vendor/build-slurm.sh" ]; then
  echo "vendor-slurm: no $vendor/build-slurm.sh: Slurm 25.11 not built, its tests will skip"
  exit 0
fi
if [ ! -f "$prefix/.built-from" ]; then
  echo "vendor-slurm: building Slurm 25.11 into $prefix from $vendor (5-8 min, cached after)"
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
# build-slurm.sh is idempotent: it returns at once when $prefix holds this tarball's build.
prefix="$($SUDO bash "$vendor/build-slurm.sh" "$prefix" | tail -1)"
[ -x "$prefix/sbin/slurmctld" ] || { echo "vendor-slurm: error: $prefix/sbin/slurmctld missing" >&2; exit 1; }
echo "$prefix"
