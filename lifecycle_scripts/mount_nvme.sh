#!/usr/bin/env bash
# Puts the NVMe instance-store disks of a HyperPod node to work for the container runtime.
#
# Nova training images are many gigabytes and pods write scratch data; the root EBS
# volume of a HyperPod node is small, while an ml.p5.48xlarge carries 8 x 3.84 TB of
# local NVMe. So container images (containerd) and pod data (kubelet: emptyDir, logs)
# go onto the instance store. Each part is skipped when already done, so a second run
# changes nothing:
#   1. find the instance-store disks by their EC2 model string (EBS is never touched);
#   2. one disk: use it; several: stripe them into one RAID0 md array;
#   3. make an ext4 filesystem unless one is there, mount it at /opt/dlami/nvme and add
#      it to /etc/fstab;
#   4. with kubelet and containerd stopped, copy /var/lib/containerd and /var/lib/kubelet
#      onto it, empty the originals and bind-mount the copies over them (fstab entries
#      plus systemd drop-ins so the services wait for the mounts after a reboot).
# With no instance store it logs that and changes nothing. If /opt/dlami/nvme is already
# mounted (the HyperPod AMI may do it itself), 1-3 are skipped and only 4 runs.
#
# Instance-store data is lost when the instance is stopped or replaced; nothing here
# needs to survive that (images are pulled again, pods are rescheduled).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lifecycle_lib.sh
source "${SCRIPT_DIR}/lifecycle_lib.sh"

readonly MOUNT_POINT=/opt/dlami/nvme
readonly MD_DEVICE=/dev/md/instance_store
readonly FS_LABEL=instance_store
# EC2 gives instance-store NVMe disks this model; EBS volumes say "Amazon Elastic Block
# Store", so the root and any data volume can never be picked up by mistake.
readonly INSTANCE_STORE_MODEL="Amazon EC2 NVMe Instance Storage"
# Each directory's name is also the systemd service that owns it.
readonly RELOCATED_DIRS=(/var/lib/containerd /var/lib/kubelet)
# kubelet talks to containerd: stop kubelet first, start it last.
readonly SERVICES=(kubelet containerd)
readonly FSTAB="${ROOT}/etc/fstab"

DISKS=()
DEVICE=""
STOPPED_SERVICES=()
SYSTEMD_STALE=0

find_instance_store_disks() {
  local listing name model
  listing="$(lsblk --nodeps --noheadings --paths --output NAME,MODEL)" ||
    fail "lsblk could not list block devices"
  while read -r name model; do
    if [[ "$model" == "$INSTANCE_STORE_MODEL" ]]; then
      DISKS+=("$name")
    fi
  done <<<"$listing"
}

prepare_device() {
  if ((${#DISKS[@]} == 1)); then
    DEVICE="${DISKS[0]}"
    log "one instance-store disk: ${DEVICE}"
    return
  fi
  DEVICE="$MD_DEVICE"
  if mdadm --detail "$MD_DEVICE" >/dev/null 2>&1; then
    log "RAID0 array ${MD_DEVICE} already exists; reusing it"
  elif mdadm --assemble "$MD_DEVICE" "${DISKS[@]}" >/dev/null 2>&1; then
    # A reboot keeps the array's superblocks on the disks: put it back together rather
    # than create a new one over it.
    log "reassembled the existing RAID0 array ${MD_DEVICE}"
  else
    log "creating RAID0 array ${MD_DEVICE} from ${#DISKS[@]} disks: ${DISKS[*]}"
    # --run: never stop to ask for confirmation, nobody is at the console.
    mdadm --create "$MD_DEVICE" --run --level=0 --raid-devices="${#DISKS[@]}" \
      --name="$FS_LABEL" "${DISKS[@]}" ||
      fail "mdadm could not create RAID0 array ${MD_DEVICE} from ${DISKS[*]}"
    # udev creates the /dev/md/ name; wait for it before formatting.
    udevadm settle || log "udevadm settle timed out; continuing"
  fi
}

ensure_filesystem() {
  local fs_type
  # blkid exits 2 when it finds no signature: the blank-disk case, not an error.
  fs_type="$(blkid -s TYPE -o value "$DEVICE" || true)"
  case "$fs_type" in
    "")
      log "formatting ${DEVICE} as ext4"
      # -m 0: no blocks reserved for root on a data-only volume (5% of 30 TB is 1.5 TB).
      mkfs.ext4 -F -m 0 -L "$FS_LABEL" "$DEVICE" || fail "mkfs.ext4 failed on ${DEVICE}"
      ;;
    ext4)
      log "${DEVICE} already holds an ext4 filesystem; not formatting it"
      ;;
    *)
      fail "${DEVICE} holds a ${fs_type} filesystem, not ext4; refusing to format it"
      ;;
  esac
}

# Appends ENTRY to /etc/fstab unless a line already mounts something on TARGET.
ensure_fstab_entry() {
  local target="$1" entry="$2"
  mkdir -p "${FSTAB%/*}"
  touch "$FSTAB"
  if awk -v t="$target" '$1 !~ /^#/ && $2 == t { found = 1 } END { exit !found }' "$FSTAB"; then
    log "/etc/fstab already mounts something on ${target}; leaving it"
    return
  fi
  # Do not glue the new entry onto a last line that lacks its newline.
  if [[ -s "$FSTAB" && -n "$(tail -c 1 "$FSTAB")" ]]; then
    printf '\n' >>"$FSTAB"
  fi
  printf '%s\n' "$entry" >>"$FSTAB"
  SYSTEMD_STALE=1
  log "added to /etc/fstab: ${entry}"
}

mount_instance_store() {
  local uuid
  mkdir -p "${ROOT}${MOUNT_POINT}"
  mount -o noatime "$DEVICE" "${ROOT}${MOUNT_POINT}" ||
    fail "could not mount ${DEVICE} on ${MOUNT_POINT}"
  log "mounted ${DEVICE} on ${MOUNT_POINT}"
  uuid="$(blkid -s UUID -o value "$DEVICE")" || fail "blkid could not read the UUID of ${DEVICE}"
  [[ -n "$uuid" ]] || fail "${DEVICE} has no filesystem UUID"
  # By UUID: an md array can come back under another name (/dev/md127) after a reboot.
  # nofail: after a stop/start the instance store is blank and the node must still boot.
  ensure_fstab_entry "$MOUNT_POINT" "UUID=${uuid} ${MOUNT_POINT} ext4 defaults,noatime,nofail 0 2"
}

# Emptying the old directory must never reach into a live mount below it (a pod's
# secret volume, say): if there is one, stop and let a person look.
check_no_submounts() {
  local dir="$1" targets
  targets="$(findmnt --raw --noheadings --output TARGET)" || fail "findmnt could not list mounts"
  if awk -v p="${ROOT}${dir}/" 'index($0, p) == 1 { found = 1 } END { exit !found }' \
    <<<"$targets"; then
    fail "${dir} has filesystems mounted below it; not moving it (unmount them and re-run)"
  fi
}

stop_services() {
  local svc
  for svc in "${SERVICES[@]}"; do
    if systemctl is-active --quiet "$svc"; then
      log "stopping ${svc}"
      systemctl stop "$svc" || fail "could not stop ${svc}"
      STOPPED_SERVICES+=("$svc")
    fi
  done
}

reload_systemd_if_stale() {
  if ((SYSTEMD_STALE)); then
    # systemd turns fstab lines and drop-ins into units only on a reload.
    systemctl daemon-reload || fail "systemctl daemon-reload failed"
    SYSTEMD_STALE=0
  fi
}

# Also the EXIT trap: a failure half-way must not leave the node without its runtime.
start_stopped_services() {
  local i svc
  for ((i = ${#STOPPED_SERVICES[@]} - 1; i >= 0; i--)); do
    svc="${STOPPED_SERVICES[i]}"
    log "starting ${svc}"
    systemctl start "$svc" || log "WARNING: could not start ${svc}"
  done
  STOPPED_SERVICES=()
}

relocate_dir() {
  local dir="$1" svc="${1##*/}"
  local src="${ROOT}${dir}" new_home="${MOUNT_POINT}/${1##*/}"
  local dst="${ROOT}${new_home}"
  mkdir -p "$src" "$dst"
  log "copying ${dir} to ${new_home}"
  # -H -A -X: keep hard links, ACLs and extended attributes (overlayfs snapshots use
  # xattrs); --numeric-ids: keep the raw owners, whatever the name tables say.
  rsync -aHAX --numeric-ids "${src}/" "${dst}/" ||
    fail "copying ${dir} to ${new_home} failed; ${dir} is left as it was"
  # Only after a complete copy: free the root volume. The directory itself stays as the
  # mount point.
  find "$src" -mindepth 1 -maxdepth 1 -exec rm -rf --one-file-system -- {} + ||
    fail "could not empty ${dir} after copying it"
  ensure_fstab_entry "$dir" "${new_home} ${dir} none bind,nofail 0 0"
  # The bind mount is nofail, so without this the service could start before it and
  # write to the empty directory underneath; with it, a missing mount keeps the service
  # down (the node goes NotReady) instead of filling the root volume.
  write_if_changed "${ROOT}/etc/systemd/system/${svc}.service.d/50-instance-store.conf" \
    "# Written by the HyperPod lifecycle script mount_nvme.sh.
[Unit]
RequiresMountsFor=${dir}"
  if ((FILE_CHANGED)); then
    SYSTEMD_STALE=1
    log "${svc} now waits for the ${dir} mount"
  fi
  mount --bind "$dst" "$src" || fail "could not bind-mount ${new_home} on ${dir}"
  log "${dir} now lives on ${new_home}"
}

relocate_runtime_dirs() {
  local dir pending=()
  mountpoint -q "${ROOT}${MOUNT_POINT}" ||
    fail "${MOUNT_POINT} is not mounted; not moving anything onto the root volume"
  for dir in "${RELOCATED_DIRS[@]}"; do
    if [[ -L "${ROOT}${dir}" ]]; then
      log "${dir} is a symlink, set up by someone else; leaving it"
    elif mountpoint -q "${ROOT}${dir}"; then
      log "${dir} is already a mount point; leaving it"
    else
      check_no_submounts "$dir"
      pending+=("$dir")
    fi
  done
  if ((${#pending[@]} == 0)); then
    log "containerd and kubelet data already live off the root volume"
    return
  fi
  stop_services
  for dir in "${pending[@]}"; do
    relocate_dir "$dir"
  done
  reload_systemd_if_stale
  start_stopped_services
}

main() {
  trap start_stopped_services EXIT
  if mountpoint -q "${ROOT}${MOUNT_POINT}"; then
    log "${MOUNT_POINT} is already mounted; not touching the disks"
  else
    find_instance_store_disks
    if ((${#DISKS[@]} == 0)); then
      log "no NVMe instance-store disks on this instance; nothing to do"
      return
    fi
    log "found ${#DISKS[@]} NVMe instance-store disk(s): ${DISKS[*]}"
    prepare_device
    ensure_filesystem
    mount_instance_store
  fi
  relocate_runtime_dirs
  reload_systemd_if_stale
}

main "$@"
