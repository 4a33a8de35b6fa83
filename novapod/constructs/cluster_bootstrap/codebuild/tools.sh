# shellcheck shell=bash
# Download the pinned tools, verify each against its pinned sha256 and put them first
# on PATH. Sourced by bootstrap.sh; every command is looked up on PATH.

log() {
  printf '[novapod-bootstrap] %s\n' "$*"
}

fail() {
  printf '[novapod-bootstrap] ERROR: %s\n' "$*" >&2
  exit 1
}

# require_sha256 VARIABLE TOOL: the variable holds a pinned sha256, or the run stops.
require_sha256() {
  local variable=$1 tool=$2 value=${!1:-}
  if [[ ! $value =~ ^[0-9a-f]{64}$ ]]; then
    fail "$variable is not pinned (got '${value}'): novapod/data/hyperpod_dependencies.yaml" \
      "has no verified sha256 for ${tool}, so it will not be downloaded or run." \
      "Add the checksum published with that release and redeploy."
  fi
}

# require_commit VARIABLE WHAT: the variable holds a full commit SHA, or the run stops.
require_commit() {
  local variable=$1 what=$2 value=${!1:-}
  if [[ ! $value =~ ^[0-9a-f]{40}$ ]]; then
    fail "$variable is not pinned (got '${value}'): novapod/data/hyperpod_dependencies.yaml" \
      "has no verified commit for ${what}. Pin a full commit SHA and redeploy."
  fi
}

# require_image VARIABLE WHAT: the variable holds an image URI, or the run stops.
require_image() {
  local variable=$1 what=$2 value=${!1:-}
  if [[ ! $value =~ ^[0-9]{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com/[^[:space:]]+:[^[:space:]]+$ ]]; then
    fail "$variable is not pinned (got '${value}'): novapod/data/hyperpod_dependencies.yaml" \
      "names no registry for ${what}. Add its account to health_monitoring_agent and redeploy."
  fi
}

require_set() {
  local variable
  for variable in "$@"; do
    [[ -n ${!variable:-} ]] || fail "$variable is not set (the buildspec sets it from the pins)"
  done
}

# download URL FILE: fetch with bounded retries and time; -f turns HTTP errors into failures.
download() {
  local url=$1 file=$2
  log "downloading ${url}"
  curl --fail --silent --show-error --location --retry 3 --connect-timeout 15 \
    --max-time 300 --output "$file" "$url" || fail "could not download ${url}"
}

# verify_sha256 FILE SHA256 WHAT: sha256sum -c, and refuse the file on any mismatch.
verify_sha256() {
  local file=$1 expected=$2 what=$3 actual
  printf '%s  %s\n' "$expected" "$file" >"${file}.sha256"
  if ! sha256sum --check --status "${file}.sha256"; then
    actual=$(sha256sum "$file" | cut -d ' ' -f 1)
    rm -f -- "$file"
    fail "checksum mismatch for ${what}: pinned ${expected}, downloaded ${actual};" \
      "refusing to install it"
  fi
  log "verified ${what} sha256 ${expected}"
}

# fetch_tools NAME...: download and verify every named tool first, then install them,
# so a bad checksum stops the run before any tool is on PATH.
fetch_tools() {
  local downloads="${WORK_DIR}/downloads" bin="${WORK_DIR}/bin" name
  mkdir -p "$downloads" "$bin"
  for name in "$@"; do
    case $name in
      helm)
        download "$HELM_URL" "${downloads}/helm.tar.gz"
        verify_sha256 "${downloads}/helm.tar.gz" "$HELM_SHA256" "helm ${HELM_VERSION}"
        ;;
      kubectl)
        download "$KUBECTL_URL" "${downloads}/kubectl"
        verify_sha256 "${downloads}/kubectl" "$KUBECTL_SHA256" "kubectl ${KUBECTL_VERSION}"
        ;;
      yq)
        download "$YQ_URL" "${downloads}/yq"
        verify_sha256 "${downloads}/yq" "$YQ_SHA256" "yq ${YQ_VERSION}"
        ;;
      *) fail "unknown tool ${name}" ;;
    esac
  done
  for name in "$@"; do
    case $name in
      helm)
        mkdir -p "${downloads}/helm"
        tar -xzf "${downloads}/helm.tar.gz" -C "${downloads}/helm" "$HELM_ARCHIVE_MEMBER" ||
          fail "the helm tarball has no ${HELM_ARCHIVE_MEMBER}"
        install -m 0755 "${downloads}/helm/${HELM_ARCHIVE_MEMBER}" "${bin}/helm"
        ;;
      *) install -m 0755 "${downloads}/${name}" "${bin}/${name}" ;;
    esac
  done
  export PATH="${bin}:${PATH}"
}
