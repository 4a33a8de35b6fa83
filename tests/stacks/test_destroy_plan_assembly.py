"""`novapod destroy-plan` against what synthesizes: for every shipped config, the plan
destroys exactly the assembly's stacks, each before every stack it depends on, turns off
termination protection where the assembly sets it, and lists every resource the
templates retain (DeletionPolicy Retain) under what stays, with the names they carry."""

from __future__ import annotations

import pytest

from novapod.operate import destroy
from tests.conftest import ALL_CONFIGS, ROOT, VALIDATION_TIME, Synthesized, joined


def plan_and_assembly(synth, path) -> tuple[destroy.DestroyPlan, Synthesized]:
    relative = str(path.relative_to(ROOT))
    plan = destroy.destroy_plan(destroy.load(str(path)), relative, now=VALIDATION_TIME)
    return plan, synth(path)


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_the_plan_destroys_every_stack_after_those_that_depend_on_it(synth, path) -> None:
    plan, result = plan_and_assembly(synth, path)
    assert sorted(plan.stacks) == sorted(result.stack_names.values())
    order = {step.kind: i for i, step in enumerate(plan.steps)}
    for kind, needs in result.dependencies.items():
        for needed in needs:
            assert order[kind] < order[needed], f"{kind} depends on {needed}: destroy it first"
    protected = {
        step.kind for step in plan.steps if any("termination-protection" in c for c in step.before)
    }
    assert protected == {kind for kind, on in result.termination_protection.items() if on}


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_every_retained_resource_is_listed_as_staying(synth, path) -> None:
    plan, result = plan_and_assembly(synth, path)
    retained = {
        (result.stack_names[kind], logical_id, resource["Type"])
        for kind, template in result.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource.get("DeletionPolicy") == "Retain"
    }
    listed = {(k.stack, k.logical_id, k.resource_type) for k in plan.kept if k.logical_id}
    assert listed == retained
    assert retained  # every environment keeps its buckets and key


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_what_the_plan_records_and_names_is_in_the_templates(synth, path) -> None:
    plan, result = plan_and_assembly(synth, path)
    kinds = {name: kind for kind, name in result.stack_names.items()}
    for record in plan.recorded:
        resource = result.templates[kinds[record.stack]]["Resources"][record.logical_id]
        assert resource["Type"] == record.resource_type
    config = destroy.load(str(path))
    for item in plan.kept:
        if not item.logical_id or item.name.startswith("$") or "<" in item.name:
            continue
        properties = result.templates[kinds[item.stack]]["Resources"][item.logical_id]["Properties"]
        named = {
            "AWS::Logs::LogGroup": "LogGroupName",
            "AWS::SageMaker::MlflowTrackingServer": "TrackingServerName",
            "AWS::S3::Bucket": "BucketName",
            "Custom::NovapodTrainingPlan": "PlanName",
        }[item.resource_type or ""]
        if named not in properties:  # an adopted plan is found by its ARN
            assert item.resource_type == "Custom::NovapodTrainingPlan"
            continue
        name = joined(properties[named])
        name = name.replace("${AWS::AccountId}", config.account or "").replace(
            "${AWS::Region}", config.region
        )
        assert name == item.name, item.what
