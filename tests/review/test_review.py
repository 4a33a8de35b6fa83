"""`novapod review` over real pairs of synthesized configs (see conftest.py): what each
section reports, the gates and exit codes, determinism and the comment limit.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from novapod import review, yamlsafe
from novapod.cli import main
from novapod.stacks.hyperpod import CLUSTER_LOGICAL_ID
from tests.conftest import ROOT
from tests.review.conftest import BASE

ENV = "novapod-nova-lite"
SECTIONS = ("### 1. Purchases", "### 2. Stateful resources", "### 3. Security", "### 4. Other")


def section(markdown: str, number: int) -> str:
    """The Markdown of one numbered section (1 purchases ... 4 other changes)."""
    start = markdown.index(SECTIONS[number - 1])
    end = markdown.index(SECTIONS[number]) if number < len(SECTIONS) else len(markdown)
    return markdown[start:end]


def resource(report: dict[str, Any], kind: str, logical_id: str) -> dict[str, Any]:
    (stack,) = [s for s in report["stacks"] if s["stack"] == f"{ENV}-{kind}"]
    (found,) = [r for r in stack["resources"] if r["logical_id"] == logical_id]
    return found


def approved_name(path: Path, index: int = 0) -> str:
    data = yamlsafe.load(path.read_text())
    return str(data["capacity"]["training_plans"][index]["purchase"]["approve"])


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(["review", *args])
    out, err = capsys.readouterr()
    return status, out, err


# --- 2. stateful --------------------------------------------------------------------


def test_adding_a_zone_is_a_hyperpod_cluster_replacement_in_the_stateful_section(
    review_of,
) -> None:
    report = review_of("base", "add-zone")
    # The engine's own verdict, from the AWS service spec: VpcConfig replaces the cluster.
    cluster = resource(report, "hyperpod", CLUSTER_LOGICAL_ID)
    assert (cluster["change"], cluster["replacement"]) == ("replace", "yes")
    assert cluster["properties"] == {"VpcConfig": "WILL_REPLACE"}
    # ... and what novapod adds: the only stateful entry, with the FSx it deletes and the
    # custom name that makes CloudFormation refuse the replacement.
    assert report["stateful"] == [
        {
            "stack": f"{ENV}-hyperpod",
            "logical_id": CLUSTER_LOGICAL_ID,
            "type": "AWS::SageMaker::Cluster",
            "what": "HyperPod cluster",
            "category": "will-replace",
            "cause": ["VpcConfig"],
            "deletes": ["its nodes", "the FSx for Lustre of restricted group nova-lite"],
            "blocked_by_name": "ClusterName",
            "note": report["stateful"][0]["note"],
        }
    ]
    assert "remove the hyperpod section" in report["stateful"][0]["note"]
    # Existing subnets, routes, NAT gateways, buckets and the key stay.
    for stack in report["stacks"]:
        if stack["stack"] != f"{ENV}-hyperpod":
            assert {r["replacement"] for r in stack["resources"]} <= {"no"}, stack["stack"]
    assert report["gates"]["stateful-replacement"] is True
    text = section(review.render(report), 2)
    assert "**Will be replaced**" in text
    assert (
        f"- HyperPod cluster `{CLUSTER_LOGICAL_ID}` (`{ENV}-hyperpod`): VpcConfig changes. "
        "Deletes its nodes and the FSx for Lustre of restricted group nova-lite."
    ) in text


def test_changing_a_restricted_groups_count_is_an_in_place_update(review_of) -> None:
    report = review_of("base", "fewer-instances")
    cluster = resource(report, "hyperpod", CLUSTER_LOGICAL_ID)
    assert (cluster["change"], cluster["replacement"]) == ("update", "no")
    assert cluster["properties"] == {"RestrictedInstanceGroups": "WILL_UPDATE"}
    assert report["stateful"] == [] and report["purchases"] == []
    # The evaluation-only job list narrows a data grant's s3:prefix condition: narrower,
    # so not a broadening.
    assert report["security"]["iam"] == []
    assert not any(report["gates"].values())
    markdown = review.render(report)
    assert "No bucket, key, file system or cluster is replaced or removed." in section(markdown, 2)
    assert (
        f"| `{CLUSTER_LOGICAL_ID}` | AWS::SageMaker::Cluster | update | "
        "RestrictedInstanceGroups (update) |"
    ) in section(markdown, 4)


def test_turning_mlflow_off_orphans_the_retained_tracking_server(review_of) -> None:
    report = review_of("mlflow", "base")
    (entry,) = report["stateful"]
    assert (entry["stack"], entry["logical_id"], entry["category"]) == (
        "novapod-nova-lite-nova-base",
        "MlflowTrackingServer",
        "orphan",
    )
    assert review_of("base", "mlflow")["stateful"] == []


def test_removing_a_restricted_group_destroys_its_fsx(review_of) -> None:
    report = review_of("extra-purchases", "base")
    cluster = resource(report, "hyperpod", CLUSTER_LOGICAL_ID)
    assert (cluster["change"], cluster["replacement"]) == ("update", "no")
    (entry,) = report["stateful"]
    assert (entry["logical_id"], entry["category"], entry["what"]) == (
        CLUSTER_LOGICAL_ID,
        "destroy",
        "FSx for Lustre of restricted group spare",
    )
    assert report["gates"]["stateful-replacement"] is True
    assert "**Destroyed**" in section(review.render(report), 2)
    # Adding the group deletes nothing.
    assert review_of("base", "extra-purchases")["stateful"] == []


# --- 1. purchases -------------------------------------------------------------------


def test_editing_a_plans_count_is_a_new_purchase_with_its_cap(
    review_of, variant, variant_path
) -> None:
    report = review_of("base", "plan-count")
    old, new = approved_name(BASE), approved_name(variant_path("plan-count"))
    assert old != new
    (plan,) = report["purchases"]
    assert {k: plan[k] for k in plan if k not in ("note", "changed", "cap_warnings")} == {
        "stack": f"{ENV}-capacity",
        "logical_id": "TrainingPlanLiteSft",
        "kind": "training-plan",
        "action": "buy",
        "purchase": True,
        "mode": "purchase",
        "plan_name": new,
        "previous_plan_name": old,
        "instance_type": "ml.p5.48xlarge",
        "instance_count": 8,
        "duration_hours": 144,
        "start_after": "2027-07-05T00:00:00+00:00",
        "end_before": "2027-08-29T00:00:00+00:00",
        "max_upfront_fee": "60000",
        "currency": "USD",
        "existing_arn": None,
        "extension_name": None,
        "target_resources": ["hyperpod-cluster"],
        "cap_changes": [],  # a new name is a new approval, with its own cap
    }
    assert "InstanceCount" in plan["changed"]
    assert report["gates"]["purchase"] is True
    text = section(review.render(report), 1)
    assert f"- **Buys** training plan `{new}`" in text
    assert "8 x ml.p5.48xlarge for a HyperPod cluster, for 144 h" in text
    assert "fee cap 60000 USD" in text
    assert f"plan {old}, if it was bought, is not refunded" in text
    # The restricted group moves onto the new plan in place (its ARN is in the template).
    cluster = resource(report, "hyperpod", CLUSTER_LOGICAL_ID)
    assert cluster["replacement"] == "no"
    group = variant("plan-count").templates["hyperpod"]["Resources"][CLUSTER_LOGICAL_ID]
    arn = group["Properties"]["RestrictedInstanceGroups"][0]["TrainingPlanArn"]
    assert arn.endswith(f"training-plan/{new}")


def test_removing_a_plan_is_reported_as_not_refunded(review_of, variant_path) -> None:
    spare = approved_name(variant_path("extra-purchases"), index=1)
    removal = review_of("extra-purchases", "base")
    (plan,) = [p for p in removal["purchases"] if p["kind"] == "training-plan"]
    assert (plan["action"], plan["plan_name"], plan["purchase"]) == ("remove", spare, False)
    assert plan["note"].startswith(f"not refunded: plan {spare} stays paid for")
    assert removal["gates"]["purchase"] is False  # nothing is bought
    assert f"- **Removes** training plan `{spare}`" in section(review.render(removal), 1)
    assert "Not refunded" in section(review.render(removal), 1)
    # The other way round the same plan is a new purchase with its own cap.
    (bought,) = [
        p for p in review_of("base", "extra-purchases")["purchases"] if p["kind"] == "training-plan"
    ]
    assert (bought["action"], bought["plan_name"], bought["previous_plan_name"]) == (
        "buy",
        spare,
        None,
    )
    assert (bought["instance_count"], bought["duration_hours"]) == (2, 48)
    assert (bought["max_upfront_fee"], bought["currency"]) == ("20000", "USD")


def test_a_bedrock_import_is_listed_with_the_purchases(review_of) -> None:
    report = review_of("base", "extra-purchases")
    (model,) = [p for p in report["purchases"] if p["kind"] == "bedrock-model"]
    assert (model["action"], model["model_name"], model["deployment"]) == (
        "import",
        "lite-sft-model",
        "on-demand",
    )
    assert model["retained"] is True and model["purchase"] is False
    assert model["output_prefix"].endswith("/nova/nova-lite/sft-lora/")
    # A reviewer of the first deploy learns that no checkpoint yet is no failure.
    assert model["note"].endswith(
        "(a job with no finished run yet: waits, and a changed refresh imports later)"
    )
    assert "- **Imports** Bedrock model `lite-sft-model`" in section(review.render(report), 1)


# --- 3. security --------------------------------------------------------------------


def test_a_widened_iam_statement_is_reported(review_of) -> None:
    report = review_of("base", "add-zone")
    (widened,) = [
        e for e in report["security"]["iam"] if e["sid"] == "CreateInterfacesInOurSubnets"
    ]
    assert widened["kind"] == "statement-widened"
    assert widened["added_actions"] == [] and widened["added_principals"] == []
    (subnet,) = widened["added_resources"]
    # The new zone's subnet, read across stacks (a weak reference, shown short).
    assert subnet.startswith("arn:aws:ec2:us-east-1:111122223333:subnet/${")
    assert f"{ENV}-network:PublishOutputRefPrivateSubnetUse1Az1" in subnet
    assert report["gates"]["iam-broadening"] is True
    text = section(review.render(report), 3)
    assert "statement `CreateInterfacesInOurSubnets`" in text and "widened: adds resources" in text


def test_added_endpoints_are_security_changes(review_of) -> None:
    report = review_of("base", "endpoint-set")
    assert [(e["kind"], e["change"], e["service"]) for e in report["security"]["endpoints"]] == [
        ("vpc-endpoint", "add", "com.amazonaws.us-east-1.lambda"),
        ("vpc-endpoint", "add", "com.amazonaws.us-east-1.sqs"),
    ]


# --- whole report -------------------------------------------------------------------


def test_the_docs_sample_is_what_the_review_renders(review_of) -> None:
    readme = (ROOT / "docs" / "reviewing.md").read_text()
    # Four backticks: the sample holds ```mermaid blocks.
    block = readme.split("<!-- review-sample:start -->\n````markdown\n")[1]
    sample = block.split("````\n<!-- review-sample:end -->")[0]
    assert review.render(review_of("base", "plan-count")).startswith(sample)


def test_identical_inputs_report_no_changes(review_of, variant, capsys) -> None:
    # The same config synthesized twice, into two directories.
    assert variant("base").outdir != variant("same").outdir
    report = review_of("base", "same")
    assert report["summary"]["changed"] is False
    assert len(report["summary"]["stacks"]["unchanged"]) == 8
    assert all(s["status"] == "unchanged" and not s["resources"] for s in report["stacks"])
    assert report["purchases"] == report["stateful"] == []
    assert not any(report["gates"].values())
    assert "No changes: all 8 stacks synthesize the same templates." in review.render(report)
    status, _, _ = cli(
        capsys,
        "--base", str(variant("base").outdir),
        "--head", str(variant("same").outdir),
        "--fail-on", ",".join(review.GATES),
    )  # fmt: skip
    assert status == 0


def test_output_is_byte_identical_across_runs(variant) -> None:
    args = [
        sys.executable, "-m", "novapod.cli", "review",
        "--base", str(variant("base").outdir), "--head", str(variant("add-zone").outdir),
    ]  # fmt: skip
    outputs = []
    for seed in ("1", "2"):  # another hash seed per process: set order must not leak
        env = dict(os.environ, PYTHONHASHSEED=seed)
        for fmt in ("markdown", "json"):
            done = subprocess.run(
                [*args, "--format", fmt], capture_output=True, env=env, check=True
            )
            outputs.append(done.stdout)
    assert outputs[0] == outputs[2] and outputs[1] == outputs[3]
    assert outputs[0].startswith(b"## novapod review") and outputs[1].startswith(b"{")
    # The Markdown is rendered from the JSON: the printed JSON renders the same bytes.
    assert review.render(json.loads(outputs[1])).encode() == outputs[0]


def test_an_oversized_diff_stays_under_the_limit(review_of) -> None:
    # Renaming the environment: every stack leaves and comes back under a new name.
    report = review_of("base", "rename-environment")
    assert report["summary"]["resource_changes"] > 250
    assert len(review.render(report)) < review.COMMENT_LIMIT
    everything = review.render(report, limit=10**7)
    limit = 12_000
    assert len(everything) > limit
    cut = review.render(report, limit=limit)
    assert len(cut) <= limit
    # Purchases and stateful resources come first and are all there; the rest is counted.
    assert section(cut, 1) == section(everything, 1)
    assert section(cut, 2) == section(everything, 2)
    (left_out,) = [line for line in cut.splitlines() if line.startswith("**Left out**")]
    assert "new IAM principals" in left_out and "resource changes" in left_out
    assert "`novapod review --format json` lists everything" in left_out


def test_a_change_of_asset_hashes_only_is_one_line(variant, tmp_path) -> None:
    """A rebuilt handler: the same synthesized stacks, one asset under a new hash."""
    head = tmp_path / "cdk.out"
    shutil.copytree(variant("base").outdir, head)
    template = head / f"{ENV}-capacity.template.json"
    assets = head / f"{ENV}-capacity.assets.json"
    old_hash = next(
        h
        for h in json.loads(assets.read_text())["files"]
        if h in template.read_text() and (head / f"asset.{h}").is_dir()
    )
    new_hash = hashlib.sha256(b"rebuilt handler").hexdigest()
    for path in (template, assets):
        path.write_text(path.read_text().replace(old_hash, new_hash))
    report = review.build(variant("base").outdir, head)
    moved = [r for s in report["stacks"] for r in s["resources"] if r["asset_only"]]
    assert moved and all(r["type"] == "AWS::Lambda::Function" for r in moved)
    markdown = review.render(report)
    (line,) = [t for t in markdown.splitlines() if t.startswith("Only asset hashes move")]
    assert all(f"`{r['logical_id']}`" in line for r in moved)
    assert "<details>" not in section(markdown, 4)  # nothing else to list


# --- gates, exit codes, bad input ---------------------------------------------------


def test_gates_decide_the_exit_status(variant, capsys) -> None:
    pair = ["--base", str(variant("base").outdir), "--head", str(variant("add-zone").outdir)]
    assert cli(capsys, *pair)[0] == 0  # no --fail-on: a report, never a failure
    assert cli(capsys, *pair, "--fail-on", "purchase")[0] == 0  # nothing is bought
    assert cli(capsys, *pair, "--fail-on", "may-replace")[0] == 0
    status, out, err = cli(capsys, *pair, "--fail-on", "purchase,stateful-replacement")
    assert status == 3 and out.startswith("## novapod review")
    assert err == "novapod review: tripped --fail-on stateful-replacement\n"


def test_bad_input_is_one_sentence_and_exit_2(variant, capsys, tmp_path, monkeypatch) -> None:
    base = str(variant("base").outdir)
    (tmp_path / "notes.txt").write_text("not a cloud assembly\n")
    empty_head = tmp_path / "empty-head"
    empty_head.mkdir()
    cases = {
        ("--base", str(tmp_path / "missing"), "--head", base): "is not a directory",
        ("--base", str(tmp_path), "--head", base): "has no manifest.json",
        # Only a base may be empty (a first deploy); an empty head is a mistake.
        ("--base", base, "--head", str(empty_head)): "has no manifest.json",
        ("--base", base, "--head", base, "--fail-on", "purchases"): "unknown gate purchases",
    }
    for args, message in cases.items():
        status, out, err = cli(capsys, *args)
        assert (status, out) == (2, "")
        assert err.startswith("novapod review: ") and err.count("\n") == 1
        assert message in err
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    status, _, err = cli(capsys, "--base", base, "--head", base)
    assert status == 2
    assert err == (
        "novapod review: Node.js (20, 22 or 24) is needed on PATH to run CDK's diff engine; "
        "install it, then run make setup\n"
    )


def test_an_empty_base_is_a_first_deploy_where_every_stack_is_added(
    variant, review_of, capsys, tmp_path
) -> None:
    from novapod import review

    nothing = tmp_path / "first"
    nothing.mkdir()
    report = review.build(nothing, variant("base").outdir)
    # The same purchase the base itself makes, reported as new: nothing was bought before.
    bought = [(p["kind"], p["action"]) for p in report["purchases"]]
    assert bought == [("training-plan", "buy")]
    stacks = {s["stack"] for s in report["stacks"]}
    assert {"novapod-nova-lite-network", "novapod-nova-lite-hyperpod"} <= stacks
    status, out, _ = cli(capsys, "--base", str(nothing), "--head", str(variant("base").outdir))
    assert status == 0 and out.startswith("## novapod review")
