"""The nova section: how the Nova environment stack serves the jobs.

The jobs' Kubernetes namespace, the IAM roles of the scientists who launch them, an
optional SageMaker managed MLflow tracking server, and the trained models to import
into Amazon Bedrock. Checks against the jobs and the eks section live in checks.py.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator

from novapod.config.base import _Model
from novapod.config.jobs import JobName

# Scientists are roles (EKS access entries of type STANDARD take roles or users; novapod
# grants roles only, so a person's access follows whoever may assume the role).
ROLE_ARN = r"^arn:aws[a-z-]*:iam::\d{12}:role/[A-Za-z0-9_+=,.@/-]+$"
RoleArn = Annotated[str, StringConstraints(pattern=ROLE_ARN, max_length=2048)]
# A Kubernetes namespace is a DNS label (RFC 1123), at most 63 characters.
NAMESPACE_PATTERN = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
Namespace = Annotated[str, StringConstraints(pattern=NAMESPACE_PATTERN)]
# Bedrock custom model names: CreateCustomModel's modelName pattern
# (docs.aws.amazon.com/bedrock/latest/APIReference/API_CreateCustomModel.html).
MODEL_NAME_PATTERN = r"^([0-9a-zA-Z][_-]?){1,63}$"
ModelName = Annotated[str, StringConstraints(pattern=MODEL_NAME_PATTERN)]
# The BedrockModel handler names the model <name>-<8 hex of the checkpoint> (a new model
# per checkpoint) within the 63 characters above, so a name keeps 54
# (novapod/constructs/bedrock_model/handler/decisions.py, model_name).
MAX_MODEL_NAME = 54
# The jobs' own namespace, which the bootstrap build creates (novapod/nova/kubernetes.py).
# Not the Nova SDK's `kubeflow`: see TRAINING_OPERATOR_NAMESPACE. The training operator
# watches every namespace: the HyperPod chart starts it without --namespace or
# KUBEFLOW_NAMESPACE (aws/sagemaker-hyperpod-cli@abcdc77b:helm_chart/HyperPodHelmChart/
# charts/training-operators/templates/Deployment/training-operator-kubeflow-Deployment.yaml),
# and unset means "all namespaces cluster-wide" (kubeflow/training-operator
# cmd/training-operator.v1/main.go, flag namespace).
DEFAULT_NAMESPACE = "nova-jobs"
# The HyperPod chart's namespace of the training operator, whose ServiceAccount is bound
# cluster-wide to `*` on pods and deployments, create on pods/exec, and secrets
# (same chart, training-operators/templates/ClusterRole/training-operator-ClusterRole.yaml
# and ClusterRoleBinding/). Whoever may create a pod-making object there can run a pod as
# that ServiceAccount; config/checks.py refuses it while the cluster has standard groups.
TRAINING_OPERATOR_NAMESPACE = "kubeflow"
# Namespaces Kubernetes and HyperPod keep for themselves.
RESERVED_NAMESPACES = ("default", "aws-hyperpod")


class Mlflow(_Model):
    """A SageMaker managed MLflow tracking server for the jobs with `mlflow: true`."""

    enabled: bool = Field(False, description="Create the tracking server (billed while it runs).")
    size: Literal["Small", "Medium", "Large"] = Field(
        "Small", description="TrackingServerSize: Small, Medium or Large."
    )


class BedrockModel(_Model):
    """A trained job's checkpoint imported into Amazon Bedrock as a custom model."""

    name: ModelName = Field(description="Bedrock custom model name, unique in the section.")
    job: JobName = Field(description="The training job whose latest checkpoint is imported.")
    deployment: Literal["on-demand"] | None = Field(
        None,
        description="on-demand: also create an on-demand deployment of the model (where "
        "Bedrock offers it: novapod/data/bedrock.yaml).",
    )
    retain: bool = Field(True, description="Keep the imported model when it leaves the config.")
    refresh: int = Field(
        0,
        ge=0,
        description="Change it (1, 2, ...) to have the next deploy read the job's newest run "
        "again: a deploy with nothing changed does not look, so this imports the first "
        "checkpoint after a deploy that found none, or a newer run's.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if len(value) > MAX_MODEL_NAME or value.endswith(("-", "_")):
            raise ValueError(
                f"{value} must be at most {MAX_MODEL_NAME} characters and not end in - or _ "
                "(novapod appends -<8 hex of the checkpoint> to make the Bedrock name)"
            )
        return value


class Nova(_Model):
    """The Nova environment: namespace, scientists' access, tracking, Bedrock imports."""

    namespace: Namespace = Field(
        DEFAULT_NAMESPACE,
        max_length=63,
        description="Kubernetes namespace of the jobs (a DNS label), created for them; "
        "kubeflow (the Nova SDK's) is refused while the cluster has standard groups.",
    )
    scientists: list[RoleArn] = Field(
        default_factory=list,
        description="IAM role ARNs allowed to launch jobs in the namespace (EKS access entries).",
    )
    mlflow: Mlflow = Field(Mlflow(), description="The MLflow tracking server.")
    bedrock_models: list[BedrockModel] = Field(
        default_factory=list, description="Trained jobs to import into Amazon Bedrock."
    )

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if value.startswith("kube-") or value in RESERVED_NAMESPACES:
            raise ValueError(
                f"{value} is a namespace Kubernetes or HyperPod keeps for itself; use another, "
                f"such as {DEFAULT_NAMESPACE}"
            )
        return value
