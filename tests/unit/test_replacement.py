"""Replacement detection from CloudFormation's create-only properties."""

from __future__ import annotations

from novapod.replacement import create_only_properties, replacements


def template(**resources) -> dict:
    return {"Resources": resources}


def cluster(**props) -> dict:
    return {"Type": "AWS::SageMaker::Cluster", "Properties": props}


def test_create_only_properties_come_from_the_cfn_lint_schemas() -> None:
    assert "/properties/VpcConfig" in create_only_properties("AWS::SageMaker::Cluster")
    assert "/properties/ClusterName" in create_only_properties("AWS::SageMaker::Cluster")
    assert "/properties/AvailabilityZoneId" in create_only_properties("AWS::EC2::Subnet")
    assert create_only_properties("AWS::Made::Up") == ()


def test_update_of_a_mutable_property_replaces_nothing() -> None:
    old = template(C=cluster(ClusterName="a", NodeRecovery="Automatic"))
    new = template(C=cluster(ClusterName="a", NodeRecovery="None"))
    assert replacements(old, new) == []


def test_create_only_change_is_reported_with_its_path() -> None:
    old = template(C=cluster(ClusterName="a", VpcConfig={"Subnets": ["s1"]}))
    new = template(C=cluster(ClusterName="a", VpcConfig={"Subnets": ["s1", "s2"]}))
    (found,) = replacements(old, new)
    assert (found.logical_id, found.reason) == ("C", "VpcConfig changes")
    # The cluster keeps its custom name "a": CloudFormation would refuse this update.
    assert found.blocked_by_name == "ClusterName"
    assert str(found).startswith("C (AWS::SageMaker::Cluster): VpcConfig changes - blocked: ")


def test_replacement_with_a_new_name_is_not_blocked() -> None:
    old = template(C=cluster(ClusterName="a", VpcConfig={"Subnets": ["s1"]}))
    new = template(C=cluster(ClusterName="b", VpcConfig={"Subnets": ["s2"]}))
    assert {r.reason for r in replacements(old, new)} == {
        "ClusterName changes",
        "VpcConfig changes",
    }
    assert all(r.blocked_by_name is None for r in replacements(old, new))


def test_nested_pointer_and_added_property() -> None:
    old = template(C=cluster(ClusterName="a"))
    new = template(C=cluster(ClusterName="a", Orchestrator={"Eks": {"ClusterArn": "x"}}))
    assert [r.reason for r in replacements(old, new)] == ["Orchestrator.Eks changes"]


def test_removed_and_retyped_resources() -> None:
    old = template(A=cluster(ClusterName="a"), B={"Type": "AWS::S3::Bucket", "Properties": {}})
    new = template(B={"Type": "AWS::SQS::Queue", "Properties": {}})
    reasons = {r.logical_id: r.reason for r in replacements(old, new)}
    assert reasons == {
        "A": "removed (deleted unless retained)",
        "B": "type changes to AWS::SQS::Queue",
    }
