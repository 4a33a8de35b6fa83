"""The NovaEnvironment handler against the fake control plane (SageMaker and EKS
DescribeCluster, DescribeTrainingPlan) and a fake Kubernetes API over HTTPS."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import boto3
import pytest
import trustme
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.retries.standard import ExponentialBackoff

from novapod.constructs.nova_environment.handler import decisions, index, kubernetes
from tests.fakes.aws_control_plane import FakeControlPlane
from tests.fakes.hyperpod import restricted_group
from tests.fakes.kubernetes import FakeKubernetes, token_errors
from tests.handlers.lifecycle import ProviderDriver
from tests.handlers.world import T0, FakeClock

CLUSTER = "novapod-nova-lite"
EKS = "novapod-nova-lite-eks"
PHYSICAL_ID = f"{CLUSTER}-nova-environment"
PLAN = "nova-p5-4x48h-1a2b3c"
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:123456789012:training-plan/{PLAN}"
ROLE = "arn:aws:iam::123456789012:role/novapod-nova-lite-nova-environment"
NAMESPACE_PATH = "/api/v1/namespaces/nova-jobs"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/pytorchjobs.kubeflow.org"


@dataclass
class Env:
    plane: FakeControlPlane
    kube: FakeKubernetes
    clock: FakeClock
    driver: ProviderDriver

    @staticmethod
    def props(**overrides: Any) -> dict[str, Any]:
        props: dict[str, Any] = {
            "ClusterName": CLUSTER,
            "EksClusterName": EKS,
            "Namespace": "nova-jobs",
            "RestrictedGroups": [{"Name": "nova-lite", "TrainingPlanArn": PLAN_ARN}],
            "RequiredCrds": ["pytorchjobs.kubeflow.org"],
            "TimeoutSeconds": "600",
            "RoleArn": ROLE,
        }
        props.update(overrides)
        return {k: v for k, v in props.items() if v is not None}

    def add_plan(self, *, status: str, start_in: timedelta, name: str = PLAN) -> str:
        offering = self.plane.add_offering(
            f"tpo-{name}", zones=["us-east-1a"], start=T0 + start_in, fee="90000.00"
        )
        return self.plane.add_plan(name, offering, statuses=[status])

    def ready(self, *, statuses: Any = ("InService",), groups: Any = None) -> None:
        """An InService cluster with one restricted group of 4 nodes on an Active plan,
        its EKS cluster, the namespace and the PyTorchJob CRD."""
        self.add_plan(status="Active", start_in=timedelta(days=-1))
        if groups is None:
            groups = [restricted_group("nova-lite", current=4, target=4, plan_arn=PLAN_ARN)]
        self.plane.hyperpod.add_cluster(
            CLUSTER, statuses=statuses, restricted_groups=groups, eks_cluster=EKS
        )
        self.plane.hyperpod.add_eks_cluster(
            EKS, endpoint=self.kube.endpoint, ca_pem=self.kube.ca_pem
        )
        self.kube.namespaces.add("nova-jobs")
        self.kube.crds.add("pytorchjobs.kubeflow.org")

    def create(self, **overrides: Any) -> Any:
        return self.driver.send(self.driver.event("Create", self.props(**overrides)))

    def aws_calls(self) -> list[tuple[str, str, dict[str, Any]]]:
        return [(c.service, c.operation, c.params) for c in self.plane.calls]


@pytest.fixture(scope="module")
def kube(control_plane: FakeControlPlane) -> Iterator[FakeKubernetes]:
    # The control_plane fixture sets the dummy credentials the handler signs with.
    secret = os.environ["AWS_SECRET_ACCESS_KEY"]
    with FakeKubernetes(cluster_name=EKS, secret_key=secret) as server:
        yield server


@pytest.fixture
def env(
    control_plane: FakeControlPlane, kube: FakeKubernetes, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Env]:
    control_plane.reset()
    kube.reset()
    clock = FakeClock(T0)
    monkeypatch.setattr(index, "_now", clock.now)
    monkeypatch.setattr(index, "CONNECT_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr(index, "READ_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setattr(index, "KUBERNETES_TIMEOUT_SECONDS", 2.0)
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.01)
    driver = ProviderDriver(
        index.on_event,
        index.is_complete,
        advance_clock=clock.advance,
        query_interval_seconds=30,
        logical_id="NovaEnvironment",
    )
    yield Env(control_plane, kube, clock, driver)
    # Every answer fit botocore's shapes, and every Kubernetes call carried a valid token.
    assert control_plane.violations == []
    assert kube.bad_tokens() == []


def records(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


# --- ready ------------------------------------------------------------------------------


def test_ready_cluster_reports_each_group_and_reads_what_it_checks(env: Env) -> None:
    env.ready(
        groups=[
            restricted_group("nova-lite", current=4, target=4, plan_arn=PLAN_ARN),
            restricted_group("nova-micro", current=1, target=2),
        ]
    )
    outcome = env.create(
        RestrictedGroups=[
            {"Name": "nova-lite", "TrainingPlanArn": PLAN_ARN},
            {"Name": "nova-micro"},
        ]
    )
    assert outcome.ok, outcome.reason
    assert (outcome.physical_id, outcome.polls) == (PHYSICAL_ID, 1)
    assert outcome.data == {
        "ClusterName": CLUSTER,
        "ClusterStatus": "InService",
        "EksClusterName": EKS,
        "Namespace": "nova-jobs",
        "RequiredCrds": "pytorchjobs.kubeflow.org",
        "Summary": f"group nova-lite: 4 of 4 nodes, plan {PLAN} is Active; "
        "group nova-micro: 1 of 2 nodes",
        "nova-lite.CurrentCount": "4",
        "nova-lite.TargetCount": "4",
        "nova-lite.PlanStatus": "Active",
        "nova-lite.PlanStartTime": "2029-12-31T00:00:00Z",
        "nova-micro.CurrentCount": "1",
        "nova-micro.TargetCount": "2",
        "nova-micro.PlanStatus": "",
        "nova-micro.PlanStartTime": "",
    }
    assert env.aws_calls() == [
        ("sagemaker", "DescribeCluster", {"ClusterName": CLUSTER}),
        ("eks", "DescribeCluster", {"name": EKS}),
        ("sagemaker", "DescribeTrainingPlan", {"TrainingPlanName": PLAN}),
    ]
    assert env.kube.paths() == [NAMESPACE_PATH, CRD_PATH]


def test_a_group_without_a_configured_plan_uses_the_plan_the_cluster_reports(env: Env) -> None:
    env.ready()
    outcome = env.create(RestrictedGroups=[{"Name": "nova-lite"}])
    assert outcome.ok, outcome.reason
    assert env.plane.calls_to("DescribeTrainingPlan") == [{"TrainingPlanName": PLAN}]
    assert outcome.data["nova-lite.PlanStatus"] == "Active"


def test_progress_is_logged_as_json_lines(env: Env, capsys: pytest.CaptureFixture[str]) -> None:
    env.ready(statuses=["Updating", "InService"])
    assert env.create().ok
    assert [(r["step"], r["message"]) for r in records(capsys)] == [
        (
            "start",
            f"Create: checking the Nova environment on HyperPod cluster {CLUSTER} "
            f"(EKS cluster {EKS}, namespace nova-jobs)",
        ),
        ("cluster", f"HyperPod cluster {CLUSTER} is Updating"),
        (
            "wait",
            f"not ready yet: HyperPod cluster {CLUSTER} is Updating; asking again at the next poll",
        ),
        ("cluster", f"HyperPod cluster {CLUSTER} is InService"),
        ("kubernetes", f"GET {NAMESPACE_PATH}: HTTP 200 (present)"),
        ("kubernetes", f"GET {CRD_PATH}: HTTP 200 (present)"),
        ("group", f"group nova-lite: 4 of 4 nodes, plan {PLAN} is Active"),
        (
            "ready",
            f"the Nova environment is ready: group nova-lite: 4 of 4 nodes, plan {PLAN} is Active",
        ),
    ]


# --- the cluster ------------------------------------------------------------------------


def test_a_creating_cluster_is_not_complete_until_in_service(env: Env) -> None:
    env.ready(statuses=["Creating", "Creating", "InService"])
    outcome = env.create()
    assert outcome.ok, outcome.reason
    assert outcome.polls == 3
    # Nothing else is read while the cluster is not InService.
    assert [(s, o) for s, o, _ in env.aws_calls()] == [
        ("sagemaker", "DescribeCluster"),
        ("sagemaker", "DescribeCluster"),
        ("sagemaker", "DescribeCluster"),
        ("eks", "DescribeCluster"),
        ("sagemaker", "DescribeTrainingPlan"),
    ]


def test_a_single_is_complete_returns_not_complete_without_sleeping(env: Env) -> None:
    env.ready(statuses=["Creating"])
    create = env.driver.event("Create", env.props())
    event = {**create, **index.on_event(create, None)}
    assert index.is_complete(event, None) == {"IsComplete": False}
    assert env.clock.now() == T0  # no pause of its own: the Provider polls


@pytest.mark.parametrize("status", ["Failed", "RollingBack"])
def test_a_failed_cluster_fails_with_its_failure_message(env: Env, status: str) -> None:
    env.ready(statuses=[(status, "Instance group nova-lite:\n insufficient capacity.")])
    outcome = env.create()
    assert not outcome.ok
    # Failed in is_complete: the framework reports on_event's ID; the rollback's Delete
    # of it calls nothing.
    assert outcome.physical_id == PHYSICAL_ID
    assert outcome.reason == (
        f"HyperPod cluster {CLUSTER} is {status}: Instance group nova-lite: insufficient capacity"
    )
    assert [o for _, o, _ in env.aws_calls()] == ["DescribeCluster"]


def test_a_cluster_that_does_not_exist_fails_at_once(env: Env) -> None:
    outcome = env.create()
    assert outcome.reason == (
        f"HyperPod cluster {CLUSTER} does not exist in this account and Region; deploy the "
        "HyperPod stack before this one"
    )
    assert outcome.polls == 1


def test_a_cluster_busy_past_the_timeout_fails_naming_what_it_waited_for(env: Env) -> None:
    env.ready(statuses=["Updating"])
    outcome = env.create(TimeoutSeconds="600")
    assert outcome.reason == (
        f"the Nova environment on HyperPod cluster {CLUSTER} is not ready after 600 s: "
        f"HyperPod cluster {CLUSTER} is Updating"
    )
    assert outcome.polls == 21  # 20 polls of 30 s reach 600 s


def test_throttled_describe_cluster_is_retried_by_botocore(env: Env) -> None:
    env.ready()
    # Faults queue per operation name: SageMaker's DescribeCluster is throttled twice and
    # passes on its third attempt, then EKS's is throttled once (HTTP 429).
    env.plane.throttle("DescribeCluster", times=2)
    env.plane.throttle("DescribeCluster", times=1, after=1)
    outcome = env.create()
    assert outcome.ok, outcome.reason
    assert outcome.polls == 1
    assert [(s, o) for s, o, _ in env.aws_calls()] == [
        ("sagemaker", "DescribeCluster"),
        ("sagemaker", "DescribeCluster"),
        ("sagemaker", "DescribeCluster"),
        ("eks", "DescribeCluster"),
        ("eks", "DescribeCluster"),
        ("sagemaker", "DescribeTrainingPlan"),
    ]


def test_describe_cluster_failing_past_its_retries_waits_for_the_next_poll(env: Env) -> None:
    env.ready()
    env.plane.throttle("DescribeCluster", times=index.MAX_ATTEMPTS)
    outcome = env.create()
    assert outcome.ok, outcome.reason
    assert outcome.polls == 2


# --- Kubernetes -------------------------------------------------------------------------


def test_a_missing_namespace_fails_naming_it(env: Env) -> None:
    env.ready()
    env.kube.namespaces.discard("nova-jobs")
    outcome = env.create()
    assert outcome.reason == (
        f"namespace nova-jobs does not exist in EKS cluster {EKS}; the eks stack's bootstrap "
        f"build creates it (cdk deploy {EKS}-eks, build log in its BootstrapBuildLogGroup "
        "output), then deploy again"
    )
    assert env.kube.paths() == [NAMESPACE_PATH]


def test_a_missing_pytorchjob_crd_fails_naming_the_chart_that_installs_it(env: Env) -> None:
    env.ready()
    env.kube.crds.clear()
    outcome = env.create()
    assert outcome.reason == (
        f"the PyTorchJob CRD (pytorchjobs.kubeflow.org) is missing from EKS cluster {EKS}: "
        "the HyperPod dependencies chart installs the training operator that defines it "
        "(helm_chart/HyperPodHelmChart of aws/sagemaker-hyperpod-cli); install the chart and "
        "deploy again"
    )


def test_every_required_crd_is_checked(env: Env) -> None:
    env.ready()
    crds = ["pytorchjobs.kubeflow.org", "mpijobs.kubeflow.org"]
    outcome = env.create(RequiredCrds=crds)
    assert outcome.reason == (
        f"the CRD mpijobs.kubeflow.org is missing from EKS cluster {EKS}: install the "
        "operator that defines it and deploy again"
    )
    assert env.kube.paths()[1:] == [
        CRD_PATH,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org",
    ]


def test_forbidden_by_kubernetes_names_the_access_entry_the_role_needs(env: Env) -> None:
    env.ready()
    denial = (
        'namespaces "nova-jobs" is forbidden: User "nova-environment" cannot get resource '
        '"namespaces" in API group "" in the namespace "nova-jobs"'
    )
    env.kube.refuse(403, denial)
    outcome = env.create()
    assert outcome.reason == (
        f"the Kubernetes API of EKS cluster {EKS} forbids role {ROLE} to read namespace "
        f"nova-jobs (HTTP 403: {denial}); the role's EKS access entry puts it in group "
        "novapod-nova-environment-check, which the eks stack's bootstrap build binds to a "
        "ClusterRole allowing get on namespaces and customresourcedefinitions"
    )


def test_unauthenticated_by_kubernetes_names_the_missing_access_entry(env: Env) -> None:
    env.ready()
    env.kube.refuse(401, "Unauthorized")
    outcome = env.create(RoleArn=None)
    assert outcome.reason == (
        f"the Kubernetes API of EKS cluster {EKS} does not accept the NovaEnvironment "
        "handler's role (HTTP 401: Unauthorized); the role needs an EKS access entry on that "
        "cluster, whose authentication mode must include API"
    )


def test_a_busy_api_server_is_asked_again_at_the_next_poll(env: Env) -> None:
    env.ready()
    env.kube.fail_next(503)
    outcome = env.create()
    assert outcome.ok, outcome.reason
    assert outcome.polls == 2
    assert env.kube.paths() == [NAMESPACE_PATH, NAMESPACE_PATH, CRD_PATH]


def test_the_api_server_is_verified_against_the_clusters_ca(env: Env) -> None:
    env.ready()
    # EKS hands out another CA than the one that signed the server's certificate.
    env.plane.hyperpod.add_eks_cluster(
        EKS, endpoint=env.kube.endpoint, ca_pem=trustme.CA().cert_pem.bytes()
    )
    outcome = env.create(TimeoutSeconds="60")
    assert not outcome.ok
    assert "CERTIFICATE_VERIFY_FAILED" in outcome.reason
    assert outcome.reason.startswith(
        f"the Nova environment on HyperPod cluster {CLUSTER} is not ready after 60 s: the "
        f"Kubernetes API of EKS cluster {EKS} at {env.kube.endpoint} does not answer ("
    )
    assert outcome.reason.endswith(
        "; the handler must run in the cluster's VPC or reach its endpoint"
    )
    assert env.kube.paths() == []  # no request got past the handshake


def test_the_token_is_signed_for_the_cluster_it_is_sent_to() -> None:
    # The fake checks the signature over x-k8s-aws-id: a token for another cluster fails.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ACCESS_KEY_ID", "AKIDFAKEFAKEFAKE")
        patch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret")
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        patch.delenv("AWS_SESSION_TOKEN", raising=False)
        sts = boto3.session.Session().client("sts")
        bearer = kubernetes.token(sts, EKS)
    header = f"Bearer {bearer}"
    assert token_errors(header, cluster_name=EKS, secret_key="fake-secret") == []
    assert token_errors(header, cluster_name="other", secret_key="fake-secret") == [
        "the signature does not match x-k8s-aws-id 'other'"
    ]


# --- restricted groups ------------------------------------------------------------------


def test_a_plan_that_has_not_started_is_reported_scheduled_not_failed(env: Env) -> None:
    env.ready(groups=[restricted_group("nova-lite", current=0, target=4, plan_arn=PLAN_ARN)])
    env.plane.plans.clear()
    env.add_plan(status="Scheduled", start_in=timedelta(days=3))
    outcome = env.create()
    assert outcome.ok, outcome.reason
    assert outcome.data["Summary"] == (
        f"group nova-lite: plan {PLAN} starts at 2030-01-04T00:00:00Z (Scheduled)"
    )
    assert {k: v for k, v in outcome.data.items() if k.startswith("nova-lite.")} == {
        "nova-lite.CurrentCount": "0",
        "nova-lite.TargetCount": "4",
        "nova-lite.PlanStatus": "Scheduled",
        "nova-lite.PlanStartTime": "2030-01-04T00:00:00Z",
    }


def test_an_active_plan_without_nodes_yet_is_reported_not_waited_for(env: Env) -> None:
    env.ready(groups=[restricted_group("nova-lite", current=0, target=4, plan_arn=PLAN_ARN)])
    outcome = env.create()
    assert outcome.ok, outcome.reason
    assert outcome.polls == 1
    assert outcome.data["Summary"] == f"group nova-lite: 0 of 4 nodes, plan {PLAN} is Active"


def test_a_configured_group_missing_from_the_cluster_fails_naming_it(env: Env) -> None:
    env.ready()
    outcome = env.create(RestrictedGroups=[{"Name": "nova-pro"}])
    assert outcome.reason == (
        f"restricted instance group nova-pro is not in HyperPod cluster {CLUSTER} (its "
        "restricted groups: nova-lite); deploy the HyperPod stack with this config first"
    )


# --- lifecycle --------------------------------------------------------------------------


def test_a_repeated_create_is_harmless_and_keeps_the_physical_id(env: Env) -> None:
    env.ready()
    event = env.driver.event("Create", env.props())
    first, second = env.driver.send(event), env.driver.send(event)
    assert first.ok and second.ok
    assert first.physical_id == second.physical_id == PHYSICAL_ID
    assert first.data == second.data
    # on_event itself calls nothing: each send made only is_complete's reads.
    assert [o for _, o, _ in env.aws_calls()] == [
        "DescribeCluster",
        "DescribeCluster",
        "DescribeTrainingPlan",
    ] * 2


def test_delete_calls_nothing_and_keeps_the_physical_id(env: Env) -> None:
    outcome = env.driver.send(env.driver.event("Delete", env.props(), physical_id=PHYSICAL_ID))
    assert (outcome.ok, outcome.physical_id) == (True, PHYSICAL_ID)
    assert env.plane.calls == [] and env.kube.requests == []


def test_invalid_properties_fail_with_the_property_named(env: Env) -> None:
    outcome = env.create(Namespace="Kubeflow_Jobs")
    assert outcome.reason == (
        "Namespace 'Kubeflow_Jobs' must be a DNS label (lowercase letters, digits, hyphens)"
    )
    outcome = env.create(RestrictedGroups=[{"Name": "a"}, {"Name": "a"}])
    assert outcome.reason == "RestrictedGroups names group a more than once"
    assert env.plane.calls == []


# --- limits -----------------------------------------------------------------------------


def test_is_complete_worst_case_fits_one_lambda_invocation() -> None:
    # Lambda's maximum is 15 minutes; the construct gives is_complete less than that.
    assert index.worst_case_seconds(decisions.MAX_GROUPS, decisions.MAX_CRDS) < 15 * 60


def test_data_stays_under_the_custom_resource_response_limit() -> None:
    props = decisions.parse_properties(
        {
            "ClusterName": CLUSTER,
            "EksClusterName": EKS,
            "Namespace": "nova-jobs",
            "RestrictedGroups": [
                {"Name": f"{i}{'g' * 62}", "TrainingPlanArn": PLAN_ARN}
                for i in range(decisions.MAX_GROUPS)
            ],
        }
    )
    report = decisions.group_report(
        "x",
        {"CurrentCount": 0, "TargetCount": 4},
        {"TrainingPlanName": PLAN, "Status": "Scheduled", "StartTime": T0 + timedelta(days=1)},
        T0,
    )
    reports = [
        decisions.GroupReport(**{**report.__dict__, "name": g.name})
        for g in props.restricted_groups
    ]
    data = decisions.result_data(props, "InService", reports)
    assert len(json.dumps(data)) < 3500
    assert data["Summary"] == "8 restricted groups; see the handler's log"


# --- the fakes --------------------------------------------------------------------------


def test_the_fake_clusters_answer_and_refuse_in_botocore_shapes(env: Env) -> None:
    once = Config(retries={"mode": "standard", "total_max_attempts": 1})
    with pytest.raises(ClientError) as sagemaker_error:
        boto3.client("sagemaker", config=once).describe_cluster(ClusterName="nope")
    with pytest.raises(ClientError) as eks_error:
        boto3.client("eks", config=once).describe_cluster(name="nope")
    assert sagemaker_error.value.response["Error"]["Code"] == "ResourceNotFound"
    assert eks_error.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert eks_error.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    env.ready()
    described = boto3.client("eks").describe_cluster(name=EKS)["cluster"]
    assert (described["endpoint"], described["status"]) == (env.kube.endpoint, "ACTIVE")
    assert described["createdAt"].year == 2030  # a timestamp botocore parsed
    groups = boto3.client("sagemaker").describe_cluster(ClusterName=CLUSTER)
    assert groups["RestrictedInstanceGroups"][0]["CurrentCount"] == 4
