#!/bin/bash
# Stand-in for the upstream RIG script: the same checks, one y/N question on stdin,
# then `helm install rig-dependencies` and the aws-node patch. FAKE_RIG_DECLINE makes
# it ignore the answer (as if the prompt had changed).
set -e
[[ -d HyperPodHelmChart ]] || { echo "run me from helm_chart/" >&2; exit 1; }
yq --version
kubectl get deployment dependencies-training-operators -n kubeflow --no-headers
read -r -p "Do you want to install this Helm chart (./rig-dependencies.yaml) ? [y/N]: " confirm
if [[ -z ${FAKE_RIG_DECLINE:-} && "$confirm" =~ ^[Yy]$ ]]; then
  helm install rig-dependencies ./HyperPodHelmChartForRIG --namespace kube-system \
    -f ./HyperPodHelmChartForRIG/values.yaml
  kubectl apply -f HyperPodHelmChartForRIG/charts/aws-node/templates/daemonset.nonrig.yaml \
    -n kube-system
else
  echo "Installation cancelled."
fi
