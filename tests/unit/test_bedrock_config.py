"""nova.bedrock_models[].deployment: on-demand only where Amazon Bedrock offers it for
imported Nova models (novapod/data/bedrock.yaml), refused with the page that says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from novapod import yamlsafe
from novapod.config import parse_config
from novapod.nova.bedrock import on_demand, parse_on_demand
from novapod.nova.catalog import catalog
from tests.conftest import ROOT
from tests.unit.test_config import FULL
from tests.unit.test_nova_config import full, issues

ON_DEMAND_PAGE = (
    "https://docs.aws.amazon.com/bedrock/latest/userguide/deploy-custom-model-on-demand.html"
)
PEFT_PAGE = "https://docs.aws.amazon.com/nova/latest/userguide/custom-fine-tune-odi.html"


def on_demand_model() -> dict[str, Any]:
    return {"bedrock_models": [{"name": "m", "job": "sft", "deployment": "on-demand"}]}


def with_job(**changes: Any) -> dict[str, Any]:
    return full(on_demand_model(), jobs=[{**FULL["jobs"][0], **changes}])


def test_the_facts_are_the_pages_lists_in_catalog_names() -> None:
    facts = on_demand()
    assert facts.source == ON_DEMAND_PAGE
    assert facts.regions == ("us-east-1", "us-west-2")
    assert facts.models == ("micro", "lite", "pro")
    assert facts.techniques_source == PEFT_PAGE
    assert facts.techniques == ("sft-lora", "dpo-lora", "rft-lora")
    # Every name is one the catalog knows, so no check compares against a typo.
    assert set(facts.models) <= set(catalog().models)
    assert set(facts.techniques) <= set(catalog().techniques)


def test_a_section_without_regions_is_a_packaging_error() -> None:
    data = yamlsafe.load((ROOT / "novapod" / "data" / "bedrock.yaml").read_text())
    data["on_demand"]["regions"] = []
    with pytest.raises(ValueError, match="on_demand lists no region"):
        parse_on_demand(data)


@pytest.mark.parametrize(
    ("region", "zones"), [("us-east-1", None), ("us-west-2", ["usw2-az1", "usw2-az2"])]
)
def test_on_demand_is_accepted_where_bedrock_offers_it(region: str, zones: Any) -> None:
    data = full(on_demand_model(), region=region)
    if zones:
        data["network"] = {"vpc": {"zone_ids": zones}}
    config = parse_config(data)
    assert config.nova_settings.bedrock_models[0].deployment == "on-demand"


def test_on_demand_in_another_region_is_refused_naming_the_page() -> None:
    data = full(on_demand_model(), region="ap-northeast-1")
    data["network"] = {"vpc": {"zone_ids": ["apne1-az1", "apne1-az4"]}}
    assert issues(data) == [
        (
            "nova.bedrock_models[0].deployment",
            "Bedrock deploys imported Nova models on demand only in us-east-1, us-west-2 "
            f"({ON_DEMAND_PAGE}), not in ap-northeast-1; remove deployment (the model is "
            "still imported)",
        )
    ]
    # Without on-demand the import itself is fine there.
    del data["nova"]["bedrock_models"][0]["deployment"]
    assert parse_config(data).region == "ap-northeast-1"


def test_on_demand_of_a_model_bedrock_does_not_deploy_so_is_refused() -> None:
    assert issues(with_job(model="nova-2-lite")) == [
        (
            "nova.bedrock_models[0].deployment",
            "sft trains Nova 2 Lite, and Bedrock deploys imported Nova models on demand only "
            f"for Nova Micro, Nova Lite, Nova Pro ({ON_DEMAND_PAGE}); remove deployment (the "
            "model is still imported)",
        )
    ]


def test_on_demand_of_a_full_rank_job_is_refused_naming_the_page() -> None:
    assert issues(with_job(technique="sft-full")) == [
        (
            "nova.bedrock_models[0].deployment",
            "sft (sft-full) is not parameter-efficient, and Bedrock deploys SageMaker-trained "
            "Nova models on demand only when they are (sft-lora, dpo-lora, rft-lora; "
            f"{PEFT_PAGE}); remove deployment (the model is still imported) or import a LoRA "
            "job",
        )
    ]
    # Importing it without a deployment is fine (provisioned throughput can serve it).
    imported = parse_config(
        full(
            {"bedrock_models": [{"name": "m", "job": "sft"}]},
            jobs=[{**FULL["jobs"][0], "technique": "sft-full"}],
        )
    )
    assert imported.nova_settings.bedrock_models[0].deployment is None


def test_novapod_validate_refuses_it_with_status_2(tmp_path: Path) -> None:
    text = (ROOT / "config/examples/nova-jobs.yaml").read_text()
    assert "region: us-east-1\n" in text and "zone_ids: [use1-az4, use1-az6]" in text
    path = tmp_path / "nova-jobs-tokyo.yaml"
    path.write_text(
        text.replace("region: us-east-1\n", "region: ap-northeast-1\n")
        .replace("zone_ids: [use1-az4, use1-az6]", "zone_ids: [apne1-az1, apne1-az4]")
        .replace("arn:aws:lambda:us-east-1:", "arn:aws:lambda:ap-northeast-1:")
    )
    result = subprocess.run(
        [sys.executable, "-m", "novapod.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stdout
    assert result.stderr.strip().splitlines() == [
        f"{path}: nova.bedrock_models[0].deployment: Bedrock deploys imported Nova models on "
        f"demand only in us-east-1, us-west-2 ({ON_DEMAND_PAGE}), not in ap-northeast-1; "
        "remove deployment (the model is still imported)"
    ]


def test_refresh_defaults_to_0_and_is_a_whole_number_from_0() -> None:
    config = parse_config(full({"bedrock_models": [{"name": "m", "job": "sft"}]}))
    assert config.nova_settings.bedrock_models[0].refresh == 0
    found = issues(full({"bedrock_models": [{"name": "m", "job": "sft", "refresh": -1}]}))
    assert found == [("nova.bedrock_models[0].refresh", "must be at least 0, got -1")]
