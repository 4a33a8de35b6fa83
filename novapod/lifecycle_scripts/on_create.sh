#!/usr/bin/env bash
# HyperPod OnCreate entry point for the standard (non-restricted) instance groups of an
# EKS-orchestrated cluster.
#
# HyperPod copies the LifeCycleConfig.SourceS3Uri prefix onto each new node and runs
# this script as root, once per node; it runs again on a replacement node, so every
# step is idempotent. It runs the steps in STEPS in order, logging each one with a
# timestamp to stdout and to LOG_FILE, and stops at the first step that fails with a
# non-zero exit and an ERROR line naming the step.
#
# Test hooks (see README.md):
#   ROOT      prefix for every filesystem path the scripts read or write; empty (the
#             default) means the real /. Tests point it at a scratch directory.
#   PATH      every system command (mdadm, mkfs.ext4, mount, mountpoint, blkid, lsblk,
#             findmnt, systemctl, rsync, sysctl, udevadm, sleep) is called by name, so
#             a directory of fakes put first on PATH replaces them.
#   LOG_FILE  log path inside ROOT; default /var/log/provision/provisioning.log.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lifecycle_lib.sh
source "${SCRIPT_DIR}/lifecycle_lib.sh"

# Order matters only in that the cheap, always-safe step goes first.
STEPS=(
  raise_kernel_limits.sh
  mount_nvme.sh
)

# Formatting disks and moving /var/lib/* on the real root needs root; refuse early
# rather than fail half-way. Tests run unprivileged against a scratch ROOT.
if [[ -z "$ROOT" && "$EUID" -ne 0 ]]; then
  echo "on_create.sh must run as root (or with ROOT set to a scratch directory)" >&2
  exit 1
fi

LOG_FILE="${LOG_FILE:-/var/log/provision/provisioning.log}"
LOG_PATH="${ROOT}${LOG_FILE}"
mkdir -p "$(dirname "$LOG_PATH")"

say() {
  log "$@" | tee -a "$LOG_PATH"
}

run_step() {
  local step="$1" rc=0
  if [[ ! -f "${SCRIPT_DIR}/${step}" ]]; then
    say "ERROR: step ${step} is missing from ${SCRIPT_DIR}; provisioning aborted"
    exit 1
  fi
  say "step ${step}: starting"
  # Run through bash: S3 does not keep the executable bit. With pipefail, rc is the
  # step's own exit status (tee succeeds), and the step's output reaches the log too.
  bash "${SCRIPT_DIR}/${step}" 2>&1 | tee -a "$LOG_PATH" || rc=$?
  if ((rc != 0)); then
    say "ERROR: step ${step} failed with exit code ${rc}; provisioning aborted"
    exit "$rc"
  fi
  say "step ${step}: done"
}

say "provisioning started (scripts in ${SCRIPT_DIR}, log ${LOG_FILE})"
for step in "${STEPS[@]}"; do
  run_step "$step"
done
say "provisioning finished"
