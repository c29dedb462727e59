#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian 12 machine (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  slurm-wlm slurmrestd munge slurm-wlm-basic-plugins slurm-wlm-jwt-plugin lua5.3
  prometheus prometheus-node-exporter
  openmpi-bin libopenmpi-dev
  sqlite3
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
for svc in slurmctld slurmd slurmrestd munge prometheus prometheus-node-exporter; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" || true
  fi
done

python3 -m pip install -q --disable-pip-version-check -e ".[test,mpi,cassandra]"
