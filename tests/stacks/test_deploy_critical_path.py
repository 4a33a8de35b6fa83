"""benchmarks/critical_path.py on hand-written templates: edges, stack order, the path."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.critical_path import (
    StackTemplate,
    ancestors,
    critical_path,
    floor,
    references,
    resource_graph,
)


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
