#!/usr/bin/env bash
# Install (or uninstall) the SageMaker HyperPod dependencies in an EKS cluster.
#
#   bootstrap.sh install   the dependencies chart, then (INSTALL_RIG=true) the RIG script,
#                          then the Nova jobs' namespace and access objects (NOVA_*)
#   bootstrap.sh delete    best-effort uninstall; reports what it could not remove
#
# Run by ClusterBootstrap's CodeBuild project; every pin arrives as an environment
# variable rendered from novapod/data/hyperpod_dependencies.yaml (see buildspec.py).
# Nothing here prompts: the RIG script's one y/N question is answered on its stdin.
#
# Idempotence: after each step the script records what it installed in the ConfigMap
# $MARKER_CONFIGMAP (kube-system), keys chart_revision / rig_revision: CHART_REVISION
# and RIG_REVISION ("<commit>:<path>", computed by buildspec.py from the pins, which
# `novapod status` compares the marker with). A step whose release is deployed and whose
# recorded revision equals the pinned one is skipped, so a second run changes nothing. The Nova step
# records nova_access_sha256, the objects it applied (nova_access_objects) and the
# namespace it created (nova_namespace, empty when the namespace already existed).
set -euo pipefail
shopt -s inherit_errexit

# shellcheck source-path=SCRIPTDIR
# shellcheck source=tools.sh
source "$(dirname "${BASH_SOURCE[0]}")/tools.sh"

NS=${CHART_NAMESPACE:-kube-system}
RIG_TOLERATION_KEY=sagemaker.amazonaws.com/RestrictedNode
# Server-side apply's field manager for the Nova access objects, and the label that marks
# a namespace novapod created (novapod/nova/kubernetes.py MANAGED_BY_LABEL).
FIELD_MANAGER=novapod-cluster-bootstrap
NOVAPOD_MANAGED=novapod

usage() {
  printf 'usage: %s install|delete\n' "${0##*/}" >&2
  exit 2
}

setup_work_dir() {
  WORK_DIR=$(mktemp -d)
  trap 'rm -rf -- "$WORK_DIR"' EXIT
  export KUBECONFIG="${WORK_DIR}/kubeconfig"
  export HELM_CACHE_HOME="${WORK_DIR}/helm/cache"
  export HELM_CONFIG_HOME="${WORK_DIR}/helm/config"
  export HELM_DATA_HOME="${WORK_DIR}/helm/data"
}

# The kubeconfig context is the cluster ARN (the default); the RIG script reads the
# region from it, so no --alias.
connect() {
  log "connecting to EKS cluster ${CLUSTER_NAME} (${AWS_REGION})"
  aws eks update-kubeconfig --name "$CLUSTER_NAME" --region "$AWS_REGION" \
    --kubeconfig "$KUBECONFIG"
}

# release_state NAME: prints deployed | other | absent; fails if helm cannot list.
release_state() {
  local name=$1 listed
  listed=$(helm list --namespace "$NS" --all --short --filter "^${name}\$") || return 1
  if [[ -z $listed ]]; then
    echo absent
    return 0
  fi
  listed=$(helm list --namespace "$NS" --deployed --short --filter "^${name}\$") || return 1
  if [[ -n $listed ]]; then echo deployed; else echo other; fi
}

marker_get() {
  kubectl get configmap "$MARKER_CONFIGMAP" --namespace "$NS" --ignore-not-found \
    --output "jsonpath={.data.$1}"
}

# marker_put CHART RIG NOVA_SHA256 NOVA_OBJECTS NOVA_NAMESPACE: the whole marker, written
# after each step that changed something.
marker_put() {
  kubectl create configmap "$MARKER_CONFIGMAP" --namespace "$NS" \
    --from-literal=chart_revision="$1" --from-literal=rig_revision="$2" \
    --from-literal=nova_access_sha256="$3" --from-literal=nova_access_objects="$4" \
    --from-literal=nova_namespace="$5" \
    --from-literal=pins_sha256="$PINS_SHA256" --from-literal=written_by=novapod-cluster-bootstrap \
    --dry-run=client --output yaml |
    kubectl apply --filename -
}

# checkout COMMIT BRANCH: fetch exactly that commit into its own directory, check that
# it is on BRANCH (a commit reachable only from a pull-request ref is refused), and
# print the path. The branch is fetched without trees or blobs (partial clone,
# --filter=tree:0, git >= 2.20; GitHub serves such "treeless" fetches, see
# github.blog/2020-12-21-get-up-to-speed-with-partial-clone-and-shallow-clone): only
# its commit graph is needed for git-merge-base(1) --is-ancestor.
checkout() {
  local commit=$1 branch=$2 dir="${WORK_DIR}/src-$1" head
  if [[ ! -d $dir ]]; then
    git init --quiet "$dir" >&2
    git -C "$dir" config gc.auto 0 >&2
    git -C "$dir" remote add origin "$HYPERPOD_REPO_URL" >&2
    git -C "$dir" fetch --quiet --depth 1 origin "$commit" >&2 ||
      fail "could not fetch commit ${commit} from ${HYPERPOD_REPO_URL}"
    git -C "$dir" checkout --quiet --detach FETCH_HEAD >&2
    git -C "$dir" fetch --quiet --filter=tree:0 origin "refs/heads/${branch}" >&2 ||
      fail "could not fetch branch ${branch} from ${HYPERPOD_REPO_URL}"
    git -C "$dir" merge-base --is-ancestor "$commit" FETCH_HEAD >&2 ||
      fail "commit ${commit} is not on branch ${branch} of ${HYPERPOD_REPO_URL};" \
        "pin a commit of that branch in novapod/data/hyperpod_dependencies.yaml"
    log "commit ${commit} is on branch ${branch}" >&2
  fi
  head=$(git -C "$dir" rev-parse HEAD)
  [[ $head == "$commit" ]] || fail "checked out ${head}, not the pinned commit ${commit}"
  echo "$dir"
}

install_chart() {
  local src chart args
  src=$(checkout "$CHART_COMMIT" "$CHART_BRANCH")
  chart="${src}/${CHART_PATH}"
  [[ -f "${chart}/Chart.yaml" ]] || fail "no Helm chart at ${CHART_PATH} in commit ${CHART_COMMIT}"
  log "building chart dependencies of ${CHART_PATH}"
  helm dependency build "$chart"
  args=(upgrade --install "$CHART_RELEASE" "$chart" --namespace "$NS"
    --timeout "$CHART_TIMEOUT" --description "novapod ${CHART_COMMIT}"
    --set-string "global.region=${AWS_REGION}"
    --set-string "${HMA_VALUES_KEY}=${HMA_IMAGE}")
  if [[ $CHART_WAIT == true ]]; then args+=(--wait); fi
  log "helm ${args[*]}"
  helm "${args[@]}"
}

# The pinned RIG script derives every name it patches from the Helm release that owns
# namespace aws-hyperpod (get_standard_hyperpod_helm_release_name); make sure that
# is the release novapod installed, so it patches novapod's objects.
assert_chart_owns_namespace() {
  local owner
  owner=$(kubectl get namespace aws-hyperpod --ignore-not-found --output \
    'jsonpath={.metadata.annotations.meta\.helm\.sh/release-name}') ||
    fail "cannot read namespace aws-hyperpod"
  [[ $owner == "$CHART_RELEASE" ]] ||
    fail "namespace aws-hyperpod belongs to Helm release '${owner:-none}', not" \
      "${CHART_RELEASE}; the RIG script would patch that release's objects. Remove the" \
      "other installation of the HyperPod dependencies chart, then redeploy."
}

# Multi-node jobs on restricted nodes need the EFA device plugin there: the RIG script
# must have added the restricted-node toleration to it (override_efa). Older script
# revisions did not, and such jobs stayed Pending; check instead of trusting the pin.
assert_efa_tolerates_restricted_nodes() {
  local daemonset="${CHART_RELEASE}-aws-efa-k8s-device-plugin" keys
  keys=$(kubectl get daemonset "$daemonset" --namespace kube-system --output \
    'jsonpath={.spec.template.spec.tolerations[*].key}') ||
    fail "cannot read DaemonSet kube-system/${daemonset}"
  [[ " ${keys} " == *" ${RIG_TOLERATION_KEY} "* ]] ||
    fail "DaemonSet kube-system/${daemonset} does not tolerate ${RIG_TOLERATION_KEY}" \
      "after ${RIG_SCRIPT} at ${RIG_COMMIT}: EFA devices would never reach restricted" \
      "nodes and multi-node jobs would stay Pending. Pin a RIG script that patches it."
  log "DaemonSet ${daemonset} tolerates ${RIG_TOLERATION_KEY}"
}

install_rig() {
  local src script_dir script state
  src=$(checkout "$RIG_COMMIT" "$RIG_BRANCH")
  script="${src}/${RIG_SCRIPT}"
  [[ -f $script ]] || fail "no RIG script at ${RIG_SCRIPT} in commit ${RIG_COMMIT}"
  script_dir=$(dirname "$script")
  log "running ${RIG_SCRIPT} at ${RIG_COMMIT} (its y/N question answered 'y')"
  # The script works relative to helm_chart/ and asks one question on stdin before it
  # installs; its "re-run?" questions come only when the RIG release exists, which
  # do_install never lets it reach. Nothing else is on stdin, so any further or changed
  # question reads EOF and the script cancels: the release check below then fails.
  (cd "$script_dir" && bash "./${script##*/}" <<<"y") ||
    fail "${RIG_SCRIPT} failed; see its output above"
  state=$(release_state "$RIG_RELEASE") || fail "cannot list Helm releases in ${NS}"
  [[ $state == deployed ]] ||
    fail "${RIG_SCRIPT} ended without a deployed ${RIG_RELEASE} release (state: ${state});" \
      "did its prompt change?"
  assert_efa_tolerates_restricted_nodes
}

# --- the Nova jobs' namespace and access objects ----------------------------------------

# namespace_manager NS: prints "" when the namespace does not exist, else "exists:" and
# the value of its app.kubernetes.io/managed-by label ("Helm" for the chart's kubeflow).
namespace_manager() {
  kubectl get namespace "$1" --ignore-not-found --output \
    'jsonpath=exists:{.metadata.labels.app\.kubernetes\.io/managed-by}'
}

# ensure_namespace NS: create the namespace from NOVA_NAMESPACE_MANIFEST unless it exists,
# and set owned_namespace to it when novapod created it (now or earlier). An existing
# namespace novapod did not create (kubeflow: the HyperPod chart's training operator
# creates it, labelled for its Helm release) is used as it is: never applied to,
# relabelled or deleted, so Helm keeps owning it. `create`, not `apply`: if another
# writer creates it between the check and here, the create fails instead of adopting it.
ensure_namespace() {
  local ns=$1 manager
  manager=$(namespace_manager "$ns") || fail "cannot read namespace ${ns}"
  if [[ -z $manager ]]; then
    kubectl create --filename - <<<"$NOVA_NAMESPACE_MANIFEST" ||
      fail "could not create namespace ${ns}"
    log "created namespace ${ns}"
    owned_namespace=$ns
  elif [[ $manager == "exists:${NOVAPOD_MANAGED}" ]]; then
    log "namespace ${ns} exists; novapod created it"
    owned_namespace=$ns
  else
    log "namespace ${ns} exists, managed by '${manager#exists:}' (not novapod): used as it is," \
      "never modified or deleted by novapod"
    owned_namespace=""
  fi
}

# delete_ref REF: delete one object named "<namespace>/<type>/<name>" (empty namespace
# for cluster-scoped objects); an object already gone is fine.
delete_ref() {
  local ns type name
  IFS=/ read -r ns type name <<<"$1"
  if [[ -n $ns ]]; then
    kubectl delete "$type" "$name" --namespace "$ns" --ignore-not-found
  else
    kubectl delete "$type" "$name" --ignore-not-found
  fi
}

# remove_namespace NS: delete a namespace only when novapod created it (its managed-by
# label says so) and it holds no PyTorchJobs: deleting a namespace deletes every job and
# Helm release in it. Returns 0 when deleted or already absent, 2 when not novapod's,
# 3 when jobs remain, 1 when it could not tell or delete.
remove_namespace() {
  local ns=$1 manager jobs
  manager=$(namespace_manager "$ns") || return 1
  [[ -n $manager ]] || return 0
  [[ $manager == "exists:${NOVAPOD_MANAGED}" ]] || return 2
  jobs=$(kubectl get pytorchjobs.kubeflow.org --namespace "$ns" --output name) || return 1
  [[ -z $jobs ]] || return 3
  # Namespace finalization runs in the background; nothing here waits on it.
  kubectl delete namespace "$ns" --ignore-not-found --wait=false || return 1
}

# namespace_outcome NS STATUS: remove_namespace's status as a sentence.
namespace_outcome() {
  case $2 in
    0) echo "namespace $1" ;;
    2) echo "namespace $1 (novapod did not create it)" ;;
    3) echo "namespace $1 (it still holds PyTorchJobs; delete it once they are done)" ;;
    *) echo "namespace $1 (could not read or delete it)" ;;
  esac
}

# install_nova_access: apply NOVA_ACCESS_MANIFEST (server-side apply, see below), create
# the namespace if needed, then delete what the previous run applied and this one no
# longer declares. Reads and updates do_install's recorded_* values.
install_nova_access() {
  local want=${NOVA_ACCESS_SHA256:-} current=${NOVA_ACCESS_OBJECTS:-} ref status
  local owned_namespace=""
  if [[ $recorded_nova == "$want" ]]; then
    if [[ -n $want ]]; then
      log "Nova access objects already at ${want}: nothing to do"
    fi
    return 0
  fi
  if [[ -n $want ]]; then
    require_set NOVA_NAMESPACE NOVA_NAMESPACE_MANIFEST NOVA_ACCESS_MANIFEST NOVA_ACCESS_OBJECTS
    ensure_namespace "$NOVA_NAMESPACE"
    # Server-side apply: the API server merges and records this field manager's fields,
    # so a rule dropped from the Role is removed on the next apply, with no
    # last-applied annotation and no client-side --prune (kubernetes.io/docs/reference/
    # using-api/server-side-apply/). novapod owns these objects outright, so a hand
    # edit is overridden (--force-conflicts) rather than failing every later deploy.
    log "applying the Nova access objects (${want}) in namespace ${NOVA_NAMESPACE}"
    kubectl apply --server-side --field-manager="$FIELD_MANAGER" --force-conflicts \
      --filename - <<<"$NOVA_ACCESS_MANIFEST" ||
      fail "could not apply the Nova access objects in namespace ${NOVA_NAMESPACE}"
  else
    log "no Nova jobs: removing the Nova access objects of an earlier deploy"
  fi
  for ref in $recorded_nova_objects; do
    if [[ " ${current} " != *" ${ref} "* ]]; then
      log "deleting ${ref}: no longer declared"
      delete_ref "$ref" || fail "could not delete ${ref}"
    fi
  done
  if [[ -n $recorded_nova_namespace && $recorded_nova_namespace != "${NOVA_NAMESPACE:-}" ]]; then
    if remove_namespace "$recorded_nova_namespace"; then status=0; else status=$?; fi
    if [[ $status -eq 0 ]]; then
      log "deleted $(namespace_outcome "$recorded_nova_namespace" 0): no longer declared"
    else
      log "left in place: $(namespace_outcome "$recorded_nova_namespace" "$status")"
    fi
  fi
  recorded_nova=$want
  recorded_nova_objects=$current
  recorded_nova_namespace=$owned_namespace
  marker_put "$recorded_chart" "$recorded_rig" "$recorded_nova" "$recorded_nova_objects" \
    "$recorded_nova_namespace"
}

do_install() {
  local rig=${INSTALL_RIG:-false} tools=(helm kubectl) chart_revision rig_revision
  local recorded_chart recorded_rig recorded_nova recorded_nova_objects recorded_nova_namespace
  local state
  require_set CLUSTER_NAME AWS_REGION HYPERPOD_REPO_URL CHART_PATH CHART_BRANCH \
    CHART_RELEASE CHART_TIMEOUT CHART_WAIT RIG_SCRIPT RIG_BRANCH RIG_RELEASE \
    MARKER_CONFIGMAP PINS_SHA256 HELM_URL HELM_ARCHIVE_MEMBER KUBECTL_URL HMA_VALUES_KEY \
    CHART_REVISION RIG_REVISION
  require_commit CHART_COMMIT "the HyperPod dependencies chart"
  require_image HMA_IMAGE "the health-monitoring agent in ${AWS_REGION}"
  require_sha256 HELM_SHA256 helm
  require_sha256 KUBECTL_SHA256 kubectl
  if [[ $rig == true ]]; then
    require_set YQ_URL
    require_commit RIG_COMMIT "the RIG dependencies script"
    require_sha256 YQ_SHA256 yq
    tools+=(yq)
  fi
  chart_revision=$CHART_REVISION
  rig_revision=$RIG_REVISION
  # A revision recorded for another commit than the one installed would hide drift.
  [[ $chart_revision == "${CHART_COMMIT}:"* ]] ||
    fail "CHART_REVISION ${chart_revision} is not of CHART_COMMIT ${CHART_COMMIT}"
  [[ $rig != true || $rig_revision == "${RIG_COMMIT}:"* ]] ||
    fail "RIG_REVISION ${rig_revision} is not of RIG_COMMIT ${RIG_COMMIT}"

  fetch_tools "${tools[@]}"
  connect
  recorded_chart=$(marker_get chart_revision) || fail "cannot read ConfigMap ${MARKER_CONFIGMAP}"
  recorded_rig=$(marker_get rig_revision) || fail "cannot read ConfigMap ${MARKER_CONFIGMAP}"
  recorded_nova=$(marker_get nova_access_sha256) || fail "cannot read ConfigMap ${MARKER_CONFIGMAP}"
  recorded_nova_objects=$(marker_get nova_access_objects) ||
    fail "cannot read ConfigMap ${MARKER_CONFIGMAP}"
  recorded_nova_namespace=$(marker_get nova_namespace) ||
    fail "cannot read ConfigMap ${MARKER_CONFIGMAP}"

  state=$(release_state "$CHART_RELEASE") || fail "cannot list Helm releases in ${NS}"
  if [[ $state == deployed && $recorded_chart == "$chart_revision" ]]; then
    log "release ${CHART_RELEASE} is already at ${chart_revision}: nothing to do"
  else
    log "release ${CHART_RELEASE}: ${state}, recorded '${recorded_chart}'; installing ${chart_revision}"
    install_chart
    recorded_chart=$chart_revision
    marker_put "$recorded_chart" "$recorded_rig" "$recorded_nova" "$recorded_nova_objects" \
      "$recorded_nova_namespace"
  fi

  state=$(release_state "$RIG_RELEASE") || fail "cannot list Helm releases in ${NS}"
  if [[ $rig != true ]]; then
    if [[ $state != absent ]]; then
      log "restricted instance groups are off; release ${RIG_RELEASE} (${state}) is left as it is"
    fi
  elif [[ $state == deployed && $recorded_rig == "$rig_revision" ]]; then
    log "release ${RIG_RELEASE} is already at ${rig_revision}: nothing to do"
  elif [[ $state != absent ]]; then
    fail "release ${RIG_RELEASE} exists (${state}) at revision '${recorded_rig:-unknown}', not" \
      "${rig_revision}. The upstream RIG script must run only once per cluster, so novapod" \
      "does not re-run it over an installation. Uninstall ${RIG_RELEASE}, restore aws-node," \
      "then redeploy."
  else
    assert_chart_owns_namespace
    install_rig
    recorded_rig=$rig_revision
    marker_put "$recorded_chart" "$recorded_rig" "$recorded_nova" "$recorded_nova_objects" \
      "$recorded_nova_namespace"
  fi
  # Last: the namespace kubeflow comes from the chart above.
  install_nova_access
  log "done: ${CHART_RELEASE} at ${recorded_chart}; ${RIG_RELEASE} at ${recorded_rig:-not installed};" \
    "Nova access objects at ${recorded_nova:-none}"
}

# remove_nova_access: delete the access objects the marker records and this resource
# declares, then the namespace if novapod created it (see remove_namespace). Reads and
# extends do_delete's removed/kept/failed lists.
remove_nova_access() {
  local refs namespaces ref ns status seen=" "
  refs="$(marker_get nova_access_objects || true) ${NOVA_ACCESS_OBJECTS:-}"
  namespaces="$(marker_get nova_namespace || true) ${NOVA_NAMESPACE:-}"
  for ref in $refs; do
    [[ $seen != *" ${ref} "* ]] || continue
    seen+="${ref} "
    if delete_ref "$ref"; then removed+=("$ref"); else failed+=("$ref (kubectl delete failed)"); fi
  done
  for ns in $namespaces; do
    [[ $seen != *" ${ns} "* ]] || continue
    seen+="${ns} "
    if remove_namespace "$ns"; then status=0; else status=$?; fi
    case $status in
      0) removed+=("$(namespace_outcome "$ns" 0)") ;;
      2 | 3) kept+=("$(namespace_outcome "$ns" "$status")") ;;
      *) failed+=("$(namespace_outcome "$ns" "$status")") ;;
    esac
  done
}

do_delete() {
  local removed=() absent=() kept=() failed=() releases=("$CHART_RELEASE") release state
  local recorded_rig=""
  require_set CLUSTER_NAME AWS_REGION CHART_RELEASE CHART_TIMEOUT RIG_RELEASE MARKER_CONFIGMAP \
    HELM_URL HELM_ARCHIVE_MEMBER KUBECTL_URL
  require_sha256 HELM_SHA256 helm
  require_sha256 KUBECTL_SHA256 kubectl
  fetch_tools helm kubectl
  if ! connect; then
    report_delete "cluster ${CLUSTER_NAME} unreachable"
    return 1
  fi
  recorded_rig=$(marker_get rig_revision) || recorded_rig=""
  # The Nova objects first (applied last, and the namespace check needs the chart's CRD).
  remove_nova_access
  # The RIG release goes first (it was installed last); only when novapod installed it.
  if [[ ${INSTALL_RIG:-false} == true || -n $recorded_rig ]]; then
    releases=("$RIG_RELEASE" "${releases[@]}")
  fi
  for release in "${releases[@]}"; do
    if ! state=$(release_state "$release"); then
      failed+=("${release} (could not list Helm releases)")
    elif [[ $state == absent ]]; then
      absent+=("$release")
    elif helm uninstall "$release" --namespace "$NS" --wait --timeout "$CHART_TIMEOUT"; then
      removed+=("$release")
    else
      failed+=("${release} (helm uninstall failed)")
    fi
  done
  if ! kubectl delete configmap "$MARKER_CONFIGMAP" --namespace "$NS" --ignore-not-found; then
    failed+=("ConfigMap ${NS}/${MARKER_CONFIGMAP}")
  fi
  report_delete ""
  [[ ${#failed[@]} -eq 0 ]]
}

# Reads removed/absent/failed from do_delete's scope.
report_delete() {
  local problem=$1 item
  log "uninstall report for cluster ${CLUSTER_NAME}:"
  [[ -z $problem ]] || log "  could not start: ${problem}; nothing was removed"
  for item in "${removed[@]}"; do log "  removed: ${item}"; done
  for item in "${absent[@]}"; do log "  already absent: ${item}"; done
  for item in "${kept[@]}"; do log "  left in place: ${item}"; done
  for item in "${failed[@]}"; do log "  NOT removed: ${item}"; done
  log "  left in place by design: CustomResourceDefinitions the charts installed (Helm never"
  log "  deletes CRDs) and, after a RIG install, the restricted-node exclusion on aws-node"
}

main() {
  [[ $# -eq 1 ]] || usage
  setup_work_dir
  case $1 in
    install) do_install ;;
    delete) do_delete ;;
    *) usage ;;
  esac
}

main "$@"
