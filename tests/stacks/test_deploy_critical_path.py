"""benchmarks/critical_path.py on hand-written templates (edges, stack order, the path),
then on every synthesized example: the deploy's critical path stays near the floor."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.critical_path import (
    FLOOR_TYPES,
    StackTemplate,
    ancestors,
    critical_path,
    floor,
    references,
    resource_graph,
)
from tests.conftest import ALL_CONFIGS, ROOT, Synthesized, resources

EXAMPLE_WITH_JOBS = ROOT / "config" / "examples" / "nova-jobs.yaml"


def res(type_: str, depends: Any = None, **props: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"Type": type_, "Properties": props}
    if depends is not None:
        body["DependsOn"] = depends
    return body


def test_references_follow_ref_getatt_and_sub() -> None:
    value = {
        "A": {"Ref": "Role"},
        "B": {"Fn::GetAtt": ["Fn", "Arn"]},
        "C": {"Fn::GetAtt": "Key.Arn"},
        "D": {"Fn::Sub": "arn:${AWS::Partition}:x:${Bucket.Arn}/${Literal}"},
        "E": {"Fn::Sub": ["${Name}-${Other}", {"Other": {"Ref": "Table"}}]},
        "F": [{"Ref": "AWS::Region"}],
    }
    # Pseudo parameters stay in (resource_graph keeps only the template's resources).
    assert references(value) == {
        "Role",
        "Fn",
        "Key",
        "Bucket",
        "Literal",
        "Name",
        "Table",
        "AWS::Region",
    }
    template = {
        "Resources": {
            "Role": res("AWS::IAM::Role"),
            "Fn": res("AWS::Lambda::Function", Role={"Fn::GetAtt": ["Role", "Arn"]}),
            "Alarm": res("AWS::CloudWatch::Alarm", "Fn", Region={"Ref": "AWS::Region"}),
            "Sub": res("AWS::SSM::Parameter", ["Role"], Value={"Fn::Sub": "${Fn.Arn}"}),
        }
    }
    graph = resource_graph(template)
    assert graph == {
        "Role": frozenset(),
        "Fn": frozenset({"Role"}),
        "Alarm": frozenset({"Fn"}),
        "Sub": frozenset({"Role", "Fn"}),
    }
    assert ancestors(graph, "Alarm") == {"Fn", "Role"}


def test_a_stack_starts_when_its_dependencies_complete() -> None:
    first = StackTemplate(
        "first",
        {"Resources": {"Nat": res("AWS::EC2::NatGateway"), "Vpc": res("AWS::EC2::VPC")}},
        frozenset(),
    )
    second = StackTemplate(
        "second",
        {
            "Resources": {
                "Role": res("AWS::IAM::Role"),
                "Cluster": res("AWS::EKS::Cluster", RoleArn={"Fn::GetAtt": ["Role", "Arn"]}),
                "Fn": res("AWS::Lambda::Function"),
            }
        },
        frozenset({"first"}),
    )
    path = critical_path({"second": second, "first": first})
    assert path.total == 120 + 15 + 600
    assert [(s.stack, s.logical_id, s.start, s.finish) for s in path.steps] == [
        ("first", "Nat", 0, 120),
        ("second", "Role", 120, 135),
        ("second", "Cluster", 135, 735),
    ]
    assert floor() == 600 + 60 + 300 + 900
    assert path.ratio(735) == 1


def test_a_cycle_is_refused() -> None:
    template = {"Resources": {"A": res("X::Y::Z", "B"), "B": res("X::Y::Z", "A")}}
    with pytest.raises(ValueError, match="cycle"):
        critical_path({"s": StackTemplate("s", template, frozenset())})


# --- the synthesized examples ------------------------------------------------------------

HYPERPOD_CONFIGS = [p for p in ALL_CONFIGS if "\nhyperpod:" in p.read_text(encoding="utf-8")]
# Waiting for nothing but the cluster's: the Nova check's grant on the HyperPod
# cluster's ARN, then the check itself (novapod/stacks/nova_base.py says why the rest
# of the Nova environment is built while the clusters are).
AFTER_THE_CLUSTER = ["AWS::IAM::Policy", "Custom::NovapodNovaEnvironment"]
# Without a nova stack: the managed policy of `novapod status`, which names the cluster's
# ARN (an ID HyperPod generates); with one, it is built beside the Nova check, off the path.
AFTER_THE_CLUSTER_WITHOUT_JOBS = ["AWS::IAM::ManagedPolicy"]


def assembly(result: Synthesized) -> dict[str, StackTemplate]:
    return {
        kind: StackTemplate(kind, template, frozenset(result.dependencies[kind]))
        for kind, template in result.templates.items()
    }


@pytest.mark.parametrize("path", HYPERPOD_CONFIGS, ids=lambda p: p.name)
def test_every_example_deploys_within_the_target_of_the_floor(synth, path) -> None:
    result = synth(path)
    path_ = critical_path(assembly(result))
    types = [s.type for s in path_.steps]
    cluster = types.index("AWS::EKS::Cluster")
    hyperpod = types.index("AWS::SageMaker::Cluster")
    # Before the EKS cluster: no VPC endpoint, NAT gateway, function or copy of lifecycle
    # scripts (the eks stack builds those beside the cluster, which needs none of them).
    early = set(types[:cluster])
    assert not early & {
        "AWS::EC2::VPCEndpoint",
        "AWS::EC2::NatGateway",
        "AWS::Lambda::Function",
        "Custom::CDKBucketDeployment",
    }, types[:cluster]
    assert types[cluster : hyperpod + 1] == list(FLOOR_TYPES)
    # After the HyperPod cluster: the Nova check and its grant, or the status policy.
    after = types[hyperpod + 1 :]
    expected = AFTER_THE_CLUSTER if "nova" in result.templates else AFTER_THE_CLUSTER_WITHOUT_JOBS
    assert after == expected, after
    assert path_.ratio(floor()) <= 1.08


def test_mlflow_is_built_while_the_clusters_are(synth) -> None:
    result = synth(EXAMPLE_WITH_JOBS)
    stacks = assembly(result)
    (server,) = resources(result.templates["nova-base"], "AWS::SageMaker::MlflowTrackingServer")
    # Only nova-base and what it waits for: the server finishes before the HyperPod
    # cluster does, so it never lengthens a deploy.
    alone = critical_path({k: stacks[k] for k in ("network", "storage", "nova-base")})
    assert alone.steps[-1].logical_id == server
    everything = critical_path(stacks)
    finish = {(s.stack, s.logical_id): s.finish for s in everything.steps}
    assert alone.total < finish[("hyperpod", "HyperPodCluster")]
