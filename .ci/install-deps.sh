#!/usr/bin/env bash
# Installs the Debian packages the test suite needs on a fresh Debian 12 machine (idempotent).
# Python packages go into the project's virtual environment: ./setup.sh test does both.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  slurm-wlm slurmrestd munge slurm-wlm-basic-plugins slurm-wlm-jwt-plugin lua5.3
  prometheus prometheus-node-exporter
  openmpi-bin libopenmpi-dev
  sqlite3
  # accounting for the fair-share tests: slurmdbd and its database, started by the tests
  slurmdbd mariadb-server
  # the project virtual environment (ensurepip) and building mpi4py against Open MPI
  python3-venv python3-dev gcc
)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing system packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian's packaged services must not run on their own: the tests start their own instances.
for svc in slurmctld slurmd slurmrestd slurmdbd mariadb munge prometheus prometheus-node-exporter; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" || true
  fi
done
