#!/usr/bin/env bash
# Puts the NVMe instance-store disks of a HyperPod node to work for the container runtime.
#
# Nova training images are many gigabytes and pods write scratch data; the root EBS
# volume of a HyperPod node is small, while an ml.p5.48xlarge carries 8 x 3.84 TB of
# local NVMe. So container images (containerd) and pod data (kubelet: emptyDir, logs)
# go onto the instance store. Each part is skipped when already done, so a second run
# changes nothing.
#
# The HyperPod AMI, like the Deep Learning AMIs, usually prepares the instance store
# itself: its dlami-nvme.service turns every instance-store disk into an LVM physical volume,
# builds volume group vg.01 with one logical volume lv_ephemeral, formats it ext4 and
# mounts it at /opt/dlami/nvme, at every boot and possibly after OnCreate has started
# (see aws/aws-parallelcluster-cookbook:cookbooks/aws-parallelcluster-environment/files/
# setup-ephemeral-drives.sh, which that service descends from). The disks then belong to
# the AMI and must never be formatted again. So, in this order:
#   1. /opt/dlami/nvme already mounted: use it.
#   2. find the instance-store disks by their EC2 model string (EBS is never touched);
#      none: nothing to do.
#   3. the disks carry this script's own earlier layout (its RAID0 array, or its
#      labelled ext4 on a single disk, after a reboot lost the mount): mount it again.
#   4. the AMI manages the disks (dlami-nvme.service is enabled, or any disk holds a
#      filesystem, LVM, RAID or partition signature, or has holders): wait, bounded, for
#      the AMI's mount (/opt/dlami/nvme or wherever a vg.01 volume is mounted) and use
#      it. If it never comes, log a warning and leave containerd and kubelet where they
#      are; nothing is formatted.
#   5. only when every disk is blank and the AMI does not manage them: one disk is used
#      as is, several are striped into one RAID0 md array; it gets ext4, is mounted at
#      /opt/dlami/nvme and added to /etc/fstab.
# Then, with kubelet and containerd stopped, /var/lib/containerd and /var/lib/kubelet
# are copied onto the instance store, emptied and bind-mounted from there (fstab entries
# plus systemd drop-ins so the services wait for the mounts after a reboot).
#
# The AWS sample for HyperPod EKS likewise waits, bounded, for the node's data volume
# to be mounted and then moves containerd's and kubelet's data onto it; see awslabs/awsome-distributed-training:
# 1.architectures/7.sagemaker-hyperpod-eks/LifecycleScripts/base-config/on_create_main.sh
# (waits 60 s for /opt/sagemaker, its default, or /opt/dlami/nvme). Its Slurm scripts
# wait up to 120 s for dlami-nvme.service, the race of that repository's issue #427
# (5.sagemaker-hyperpod/LifecycleScripts/base-config/utils/install_enroot_pyxis.sh).
# Where the sample rewrites containerd's config and symlinks /var/lib/kubelet, this
# script bind-mounts both directories, so the AMI's containerd config stays untouched.
# /opt/sagemaker is the secondary EBS volume of InstanceStorageConfigs (SageMaker API
# reference, ClusterEbsVolumeConfig: "mounted to /opt/sagemaker"), not instance store,
# so it is used only if an AMI puts vg.01 there.
#
# Instance-store data is lost when the instance is stopped or replaced; nothing here
# needs to survive that (images are pulled again, pods are rescheduled).
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lifecycle_lib.sh
source "${SCRIPT_DIR}/lifecycle_lib.sh"

# Where the AMI mounts the instance store, and where this script mounts it otherwise.
readonly DLAMI_MOUNT=/opt/dlami/nvme
readonly AMI_UNIT=dlami-nvme.service
# The AMI's volume group: /dev/mapper/vg.01-* and /dev/vg.01/* name its volumes.
readonly AMI_VG=vg.01
readonly MD_DEVICE=/dev/md/instance_store
readonly FS_LABEL=instance_store
# As long as the AWS samples wait for dlami-nvme.service (120 s), in 5 s steps.
readonly MOUNT_WAIT_SECONDS=120
readonly POLL_SECONDS=5
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
# The mounted instance-store filesystem the runtime directories move onto.
STORE_MOUNT="$DLAMI_MOUNT"
STORE_READY=0
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

# Prints the signature blkid finds on DEVICE (ext4, LVM2_member, linux_raid_member, a
# partition table type...), or nothing. -p probes the device itself rather than
# blkid's cache, which may predate what the AMI wrote a moment ago.
signature_of() {
  local device="$1" found rc=0
  found="$(blkid -p -o value -s TYPE -s PTTYPE "$device")" || rc=$?
  case "$rc" in
    0) printf '%s' "${found//$'\n'/ }" ;;
    2) ;; # blkid's "nothing found": a blank device
    *) printf 'unknown (blkid exit %s)' "$rc" ;;
  esac
}

# Prints what already holds DISK, or nothing if the disk is blank: a signature, or
# partitions or holders (an LVM volume, an md array) that lsblk lists below it.
disk_claim() {
  local disk="$1" signature tree
  signature="$(signature_of "$disk")"
  if [[ -n "$signature" ]]; then
    printf '%s' "$signature"
    return
  fi
  if ! tree="$(lsblk --noheadings --list --paths --output NAME "$disk")"; then
    printf 'unknown (lsblk could not list it)'
    return
  fi
  # The first line is the disk itself; anything below it is built on it.
  if [[ "$tree" == *$'\n'* ]]; then
    printf 'holders %s' "$(tail -n +2 <<<"$tree" | tr '\n' ' ')"
  fi
}

# True if the disks carry this script's own earlier layout, which a reboot keeps: the
# RAID0 array (running, or assembled again from its members, by name only) or, on a
# single disk, an ext4 filesystem with this script's label. Sets DEVICE.
own_layout() {
  local disk label
  if ((${#DISKS[@]} == 1)); then
    [[ "$(signature_of "${DISKS[0]}")" == ext4 ]] || return 1
    label="$(blkid -p -o value -s LABEL "${DISKS[0]}" || true)"
    [[ "$label" == "$FS_LABEL" ]] || return 1
    DEVICE="${DISKS[0]}"
    log "${DEVICE} holds this script's ext4 filesystem (label ${FS_LABEL}); reusing it"
    return 0
  fi
  for disk in "${DISKS[@]}"; do
    [[ "$(signature_of "$disk")" == linux_raid_member ]] || return 1
  done
  DEVICE="$MD_DEVICE"
  if mdadm --detail "$MD_DEVICE" >/dev/null 2>&1; then
    log "RAID0 array ${MD_DEVICE} already exists; reusing it"
  elif mdadm --assemble "$MD_DEVICE" --name="$FS_LABEL" "${DISKS[@]}" >/dev/null 2>&1; then
    # --name: only this script's array; members of anyone else's stay as they are.
    log "reassembled the existing RAID0 array ${MD_DEVICE}"
  else
    return 1
  fi
}

# Prints "disk: what holds it" for every disk that is not blank.
claimed_disks() {
  local disk claim
  for disk in "${DISKS[@]}"; do
    claim="$(disk_claim "$disk")"
    if [[ -n "$claim" ]]; then
      printf '%s: %s\n' "$disk" "$claim"
    fi
  done
}

ami_unit_enabled() {
  systemctl is-enabled --quiet "$AMI_UNIT" >/dev/null 2>&1
}

# True once the AMI's instance-store filesystem is mounted; sets STORE_MOUNT to where:
# /opt/dlami/nvme, or wherever a logical volume of vg.01 is mounted.
find_ami_mount() {
  local table source target
  if mountpoint -q "${ROOT}${DLAMI_MOUNT}"; then
    STORE_MOUNT="$DLAMI_MOUNT"
    return 0
  fi
  table="$(findmnt --raw --noheadings --output SOURCE,TARGET)" || return 1
  while read -r source target; do
    case "$source" in
      "/dev/mapper/${AMI_VG}-"* | "/dev/${AMI_VG}/"*)
        target="${target#"$ROOT"}"
        if [[ -n "$target" && "$target" != / ]]; then
          STORE_MOUNT="$target"
          return 0
        fi
        ;;
    esac
  done <<<"$table"
  return 1
}

# HyperPod may start OnCreate while dlami-nvme.service is still building the volume.
wait_for_ami_mount() {
  local waited=0
  while ! find_ami_mount; do
    if ((waited >= MOUNT_WAIT_SECONDS)); then
      return 1
    fi
    if ((waited == 0)); then
      log "waiting up to ${MOUNT_WAIT_SECONDS}s for the AMI to mount the instance store"
    fi
    sleep "$POLL_SECONDS"
    waited=$((waited + POLL_SECONDS))
  done
  log "the AMI mounted the instance store on ${STORE_MOUNT}; using it, not touching the disks"
}

create_device() {
  if ((${#DISKS[@]} == 1)); then
    DEVICE="${DISKS[0]}"
    log "one blank instance-store disk: ${DEVICE}"
    return
  fi
  DEVICE="$MD_DEVICE"
  log "creating RAID0 array ${MD_DEVICE} from ${#DISKS[@]} blank disks: ${DISKS[*]}"
  # --run: never stop to ask for confirmation, nobody is at the console.
  mdadm --create "$MD_DEVICE" --run --level=0 --raid-devices="${#DISKS[@]}" \
    --name="$FS_LABEL" "${DISKS[@]}" ||
    fail "mdadm could not create RAID0 array ${MD_DEVICE} from ${DISKS[*]}"
  # udev creates the /dev/md/ name; wait for it before formatting.
  udevadm settle || log "udevadm settle timed out; continuing"
}

ensure_filesystem() {
  local fs_type
  # blkid exits 2 when it finds no signature: the blank-device case, not an error.
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
  STORE_MOUNT="$DLAMI_MOUNT"
  mkdir -p "${ROOT}${STORE_MOUNT}"
  mount -o noatime "$DEVICE" "${ROOT}${STORE_MOUNT}" ||
    fail "could not mount ${DEVICE} on ${STORE_MOUNT}"
  log "mounted ${DEVICE} on ${STORE_MOUNT}"
  uuid="$(blkid -s UUID -o value "$DEVICE")" || fail "blkid could not read the UUID of ${DEVICE}"
  [[ -n "$uuid" ]] || fail "${DEVICE} has no filesystem UUID"
  # By UUID: an md array can come back under another name (/dev/md127) after a reboot.
  # nofail: after a stop/start the instance store is blank and the node must still boot.
  ensure_fstab_entry "$STORE_MOUNT" "UUID=${uuid} ${STORE_MOUNT} ext4 defaults,noatime,nofail 0 2"
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
  local dir="$1" bind_options="$2" svc="${1##*/}"
  local src="${ROOT}${dir}" new_home="${STORE_MOUNT}/${1##*/}"
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
  ensure_fstab_entry "$dir" "${new_home} ${dir} none ${bind_options} 0 0"
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
  local dir bind_options="bind,nofail" pending=()
  mountpoint -q "${ROOT}${STORE_MOUNT}" ||
    fail "${STORE_MOUNT} is not mounted; not moving anything onto the root volume"
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
  if ami_unit_enabled; then
    # After a reboot the AMI's service mounts the volume again, later than fstab's
    # local mounts: bind only once it has, never onto the bare directory beneath. No
    # ordering cycle: a nofail mount does not hold up local-fs.target (systemd.mount(5),
    # "x-systemd.after=" and default dependencies).
    bind_options+=",x-systemd.after=${AMI_UNIT}"
  fi
  stop_services
  for dir in "${pending[@]}"; do
    relocate_dir "$dir" "$bind_options"
  done
  reload_systemd_if_stale
  start_stopped_services
}

# Decides where the instance store is and makes sure it is mounted; sets STORE_READY to
# 0 when the runtime directories should stay where they are. (Not used as an `if`
# condition: bash would switch off set -e inside it.)
prepare_instance_store() {
  local claims
  STORE_READY=0
  if mountpoint -q "${ROOT}${DLAMI_MOUNT}"; then
    log "${DLAMI_MOUNT} is already mounted; not touching the disks"
    STORE_READY=1
    return
  fi
  find_instance_store_disks
  if ((${#DISKS[@]} == 0)); then
    log "no NVMe instance-store disks on this instance; nothing to do"
    return
  fi
  log "found ${#DISKS[@]} NVMe instance-store disk(s): ${DISKS[*]}"
  if own_layout; then
    ensure_filesystem
    mount_instance_store
    STORE_READY=1
    return
  fi
  claims="$(claimed_disks)"
  if [[ -n "$claims" ]] || ami_unit_enabled; then
    if [[ -n "$claims" ]]; then
      log "the instance-store disks are in use, not formatting them: ${claims//$'\n'/; }"
    else
      log "${AMI_UNIT} is enabled: the AMI prepares the instance store; not formatting it"
    fi
    if wait_for_ami_mount; then
      STORE_READY=1
    else
      log "WARNING: the instance store was not mounted within ${MOUNT_WAIT_SECONDS}s;" \
        "leaving containerd and kubelet data on the root volume"
    fi
    return
  fi
  create_device
  ensure_filesystem
  mount_instance_store
  STORE_READY=1
}

main() {
  trap start_stopped_services EXIT
  prepare_instance_store
  if ((STORE_READY)); then
    relocate_runtime_dirs
  fi
  reload_systemd_if_stale
}

main "$@"
