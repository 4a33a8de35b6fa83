# shellcheck shell=bash
# Sourced by every lifecycle script: the ROOT test prefix, timestamped logging and an
# idempotent file writer.

# ROOT prefixes every filesystem path the scripts read or write. It is empty on a real
# node (the paths are the real /etc, /var, /opt) and a scratch directory in the tests.
# Device names (/dev/nvme1n1, /dev/md/...) are not prefixed: they are only ever handed
# to commands (mdadm, blkid, mkfs.ext4, mount), which the tests replace through PATH.
ROOT="${ROOT:-}"
ROOT="${ROOT%/}"
export ROOT

LOG_TAG="${0##*/}"
LOG_TAG="${LOG_TAG%.sh}"

# One line per event with a timestamp and the script's name, so the steps' lines in the
# shared provisioning log can be ordered and attributed.
log() {
  printf '%(%Y-%m-%dT%H:%M:%S%z)T [%s] %s\n' -1 "$LOG_TAG" "$*"
}

fail() {
  log "ERROR: $*" >&2
  exit 1
}

# Writes CONTENT and a newline to FILE unless FILE already holds exactly that, so a
# re-run leaves the file (and its mtime) alone. Sets FILE_CHANGED to 1 or 0.
FILE_CHANGED=0
# shellcheck disable=SC2034 # FILE_CHANGED is read by the scripts that source this file
write_if_changed() {
  local file="$1" content="$2"
  FILE_CHANGED=0
  if [[ -f "$file" && "$(<"$file")" == "$content" ]]; then
    return 0
  fi
  mkdir -p "${file%/*}"
  # Write then rename, so a crash never leaves a half-written config behind.
  printf '%s\n' "$content" >"${file}.tmp"
  mv -f "${file}.tmp" "$file"
  FILE_CHANGED=1
}
