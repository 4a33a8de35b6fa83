#!/bin/bash
# Stand-in for the upstream RIG script at the pinned commit: it finds the chart's
# release from namespace aws-hyperpod, asks one y/N question on stdin, then
# `helm upgrade --install rig-dependencies`, applies the aws-node patch and patches
# <release>-aws-efa-k8s-device-plugin with the restricted-node toleration.
# FAKE_RIG_DECLINE makes it ignore the answer (as if the prompt had changed);
# FAKE_RIG_SKIP_EFA makes it skip the EFA patch (as the revision pinned before did).
set -e
[[ -d HyperPodHelmChart ]] || { echo "run me from helm_chart/" >&2; exit 1; }
yq --version
release=$(kubectl get namespace aws-hyperpod -o yaml)
kubectl get deployment "${release}-training-operators" -n kubeflow --no-headers
read -r -p "🚀 Do you want to install this Helm chart (./rig-dependencies.yaml) ? [y/N]: " confirm
if [[ -z ${FAKE_RIG_DECLINE:-} && "$confirm" =~ ^[Yy]$ ]]; then
  helm upgrade --install rig-dependencies ./HyperPodHelmChartForRIG --namespace kube-system \
    -f ./HyperPodHelmChartForRIG/values.yaml
  kubectl apply -f HyperPodHelmChartForRIG/charts/aws-node/templates/daemonset.nonrig.yaml \
    -n kube-system
  if [[ -z ${FAKE_RIG_SKIP_EFA:-} ]]; then
    kubectl patch daemonset "${release}-aws-efa-k8s-device-plugin" -n kube-system \
      --type=json -p='[{"op":"add","path":"/spec/template/spec/tolerations/-","value":{"key":"sagemaker.amazonaws.com/RestrictedNode","value":"Worker","effect":"NoSchedule"}}]'
  fi
else
  echo "❌ Installation cancelled."
fi
