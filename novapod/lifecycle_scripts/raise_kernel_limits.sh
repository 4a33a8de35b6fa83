#!/usr/bin/env bash
# Raises kernel limits that a busy Kubernetes GPU node outgrows, through a sysctl.d
# drop-in (so they survive reboots) that is written only when its content differs, and
# applies them now.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lifecycle_lib.sh
source "${SCRIPT_DIR}/lifecycle_lib.sh"

# 90-: a file the AMI ships later in the sysctl.d order (99-*) still wins at boot, so
# this only fills in values the AMI leaves at the kernel defaults.
readonly DROP_IN=/etc/sysctl.d/90-hyperpod-node-limits.conf

readonly LIMITS="# Written by the HyperPod lifecycle script raise_kernel_limits.sh.
# kubelet, containerd, every container's log follower and file-watching tools each take
# inotify instances; the default of 128 per user runs out on a node with many pods and
# shows up as 'too many open files' from kubectl logs -f.
fs.inotify.max_user_instances = 8192
fs.inotify.max_user_watches = 524288
# Training jobs memory-map many dataset shards and checkpoint files, and each data
# loader worker maps its own copy; the default of 65530 mappings can be exceeded.
vm.max_map_count = 262144"

write_if_changed "${ROOT}${DROP_IN}" "$LIMITS"
if ((FILE_CHANGED)); then
  log "wrote ${DROP_IN}"
else
  log "${DROP_IN} already up to date"
fi

# Apply only this file: 'sysctl --system' would also reset values that the VPC CNI and
# kube-proxy set at run time (rp_filter, forwarding) back to the files' values.
sysctl -p "${ROOT}${DROP_IN}" || fail "sysctl could not apply ${DROP_IN}"
log "kernel limits applied"
