"""The fake control plane answers CloudFormation DescribeStacks and S3 Get/Head/ListObjectsV2
as the services do, to real boto3 clients: shapes botocore parses, the services' errors
word for word, pagination, URL-encoded keys, faults, and IAM denials under `act_as`."""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from tests.fakes.aws_control_plane import ACCOUNT, STACK_NAME_PATTERN
from tests.fakes.iam import Principal, Statement
from tests.handlers.world import World

ONE_ATTEMPT = {"retries": {"mode": "standard", "total_max_attempts": 1}}
CREATED = datetime(2030, 1, 1, 12, 30, tzinfo=UTC)
WRITTEN = datetime(2030, 2, 3, 4, 5, 6, tzinfo=UTC)
STACK_ARN = f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/"
ROLE = f"arn:aws:sts::{ACCOUNT}:assumed-role/Launcher/handler"


@pytest.fixture
def cfn(world: World) -> Any:
    return boto3.client(
        "cloudformation",
        endpoint_url=world.plane.url,
        region_name="us-east-1",
        config=Config(**ONE_ATTEMPT),
    )


@pytest.fixture
def s3(world: World) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=world.plane.url,
        region_name="us-east-1",
        config=Config(s3={"addressing_style": "path"}, **ONE_ATTEMPT),
    )


def error_of(call: Any) -> tuple[int, dict[str, str]]:
    with pytest.raises(ClientError) as caught:
        call()
    return caught.value.response["ResponseMetadata"]["HTTPStatusCode"], caught.value.response[
        "Error"
    ]


def allow(action: str, resource: str, **conditions: dict[str, str]) -> Statement:
    parsed = {op: {k: (v,) for k, v in keys.items()} for op, keys in conditions.items()}
    return Statement("Allow", (action,), (resource,), parsed)


# --- CloudFormation ----------------------------------------------------------------------


def test_describe_stacks_answers_a_stack_with_its_outputs(world: World, cfn: Any) -> None:
    stack_id = world.plane.add_stack(
        "novapod-data",
        {"DataBucket": "novapod-data-123", "OutputBucket": "novapod-out-123"},
        descriptions={"DataBucket": "Training data"},
        exports={"OutputBucket": "novapod-output-bucket"},
        created=CREATED,
    )
    assert stack_id.startswith(STACK_ARN + "novapod-data/")
    expected = {
        "StackId": stack_id,
        "StackName": "novapod-data",
        "CreationTime": CREATED,
        "StackStatus": "CREATE_COMPLETE",
        "DisableRollback": False,
        "EnableTerminationProtection": False,
        "DriftInformation": {"StackDriftStatus": "NOT_CHECKED"},
        "Outputs": [
            {
                "OutputKey": "DataBucket",
                "OutputValue": "novapod-data-123",
                "Description": "Training data",
            },
            {
                "OutputKey": "OutputBucket",
                "OutputValue": "novapod-out-123",
                "ExportName": "novapod-output-bucket",
            },
        ],
    }
    assert cfn.describe_stacks(StackName="novapod-data")["Stacks"] == [expected]
    assert cfn.describe_stacks(StackName=stack_id)["Stacks"] == [expected]
    assert "NextToken" not in cfn.describe_stacks(StackName="novapod-data")
    assert world.plane.calls_to("DescribeStacks") == [
        {"StackName": "novapod-data"},
        {"StackName": stack_id},
        {"StackName": "novapod-data"},
    ]


def test_a_stack_without_outputs_has_no_outputs_member(world: World, cfn: Any) -> None:
    world.plane.add_stack("novapod-net", status="UPDATE_ROLLBACK_COMPLETE")
    (stack,) = cfn.describe_stacks(StackName="novapod-net")["Stacks"]
    assert stack["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    assert "Outputs" not in stack


def test_describe_stacks_without_a_name_pages_every_live_stack(world: World, cfn: Any) -> None:
    world.plane.stack_page_size = 2
    for name in ("s1", "s2", "s3", "s4", "s5"):
        world.plane.add_stack(name)
    gone = world.plane.add_stack("gone", status="DELETE_COMPLETE")
    pages = list(cfn.get_paginator("describe_stacks").paginate())
    assert [[s["StackName"] for s in page["Stacks"]] for page in pages] == [
        ["s1", "s2"],
        ["s3", "s4"],
        ["s5"],
    ]
    tokens = [call.get("NextToken") for call in world.plane.calls_to("DescribeStacks")]
    assert tokens == [None, pages[0]["NextToken"], pages[1]["NextToken"]]
    assert "NextToken" not in pages[2]
    # A deleted stack is found by its StackId only (API_DescribeStacks.html).
    assert cfn.describe_stacks(StackName=gone)["Stacks"][0]["StackStatus"] == "DELETE_COMPLETE"
    assert error_of(lambda: cfn.describe_stacks(StackName="gone")) == (
        400,
        {
            "Type": "Sender",
            "Code": "ValidationError",
            "Message": "Stack with id gone does not exist",
        },
    )


def test_a_missing_stack_is_the_services_validation_error(world: World, cfn: Any) -> None:
    assert error_of(lambda: cfn.describe_stacks(StackName="novapod-missing")) == (
        400,
        {
            "Type": "Sender",
            "Code": "ValidationError",
            "Message": "Stack with id novapod-missing does not exist",
        },
    )


def signed_post(url: str, service: str, body: bytes) -> tuple[int, str]:
    """A form POST whose Authorization names `service` in its credential scope."""
    headers = {
        "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
        "Authorization": (
            f"AWS4-HMAC-SHA256 Credential=AKIDFAKE/20300101/us-east-1/{service}/aws4_request, "
            "SignedHeaders=host, Signature=0"
        ),
    }
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # loopback only
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_cloudformation_requests_are_checked_like_the_service(world: World, cfn: Any) -> None:
    world.plane.add_stack("novapod-data")
    # The service's own pattern for StackName (not in botocore's model).
    assert error_of(lambda: cfn.describe_stacks(StackName="novapod_data")) == (
        400,
        {
            "Type": "Sender",
            "Code": "ValidationError",
            "Message": "1 validation error detected: Value 'novapod_data' at 'stackName' "
            "failed to satisfy constraint: Member must satisfy regular expression pattern: "
            + STACK_NAME_PATTERN,
        },
    )
    # The model's length constraint on NextToken, which botocore checks too.
    unchecked = boto3.client(
        "cloudformation",
        endpoint_url=world.plane.url,
        region_name="us-east-1",
        config=Config(parameter_validation=False, **ONE_ATTEMPT),
    )
    assert error_of(lambda: unchecked.describe_stacks(NextToken=""))[1]["Message"] == (
        "1 validation error detected: Value '' at 'nextToken' failed to satisfy constraint: "
        "Member must have length greater than or equal to 1"
    )
    # botocore never sends a parameter its model lacks; a request that does is refused.
    status, body = signed_post(
        world.plane.url,
        "cloudformation",
        b"Action=DescribeStacks&Version=2010-05-15&StackName=novapod-data&Colour=red",
    )
    assert status == 400
    assert "<Code>ValidationError</Code>" in body
    assert (
        "<Message>1 validation error detected: 'colour' is not a member of "
        "DescribeStacksInput</Message>"
    ) in body
    assert world.plane.calls_to("DescribeStacks")[-1] == {
        "StackName": "novapod-data",
        "Colour": "red",
    }


def test_cloudformation_faults(world: World, cfn: Any) -> None:
    world.plane.add_stack("novapod-data")
    world.plane.throttle("DescribeStacks")
    world.plane.server_error("DescribeStacks")
    world.plane.error("DescribeStacks", "AccessDenied", status=403, message="nope")
    assert error_of(lambda: cfn.describe_stacks(StackName="novapod-data")) == (
        400,
        {"Type": "Sender", "Code": "Throttling", "Message": "Rate exceeded"},
    )
    assert error_of(lambda: cfn.describe_stacks(StackName="novapod-data")) == (
        500,
        {"Type": "Receiver", "Code": "InternalFailure", "Message": "An internal error occurred"},
    )
    assert error_of(lambda: cfn.describe_stacks(StackName="novapod-data")) == (
        403,
        {"Type": "Sender", "Code": "AccessDenied", "Message": "nope"},
    )
    assert cfn.describe_stacks(StackName="novapod-data")["Stacks"][0]["StackName"] == (
        "novapod-data"
    )
    assert world.plane.calls_to("DescribeStacks") == [{"StackName": "novapod-data"}] * 4


def test_describe_stacks_is_authorized_on_the_stack(world: World, cfn: Any) -> None:
    stack_id = world.plane.add_stack("novapod-data")
    world.plane.add_stack("other")
    world.plane.act_as(
        Principal(
            "Launcher",
            (
                allow(
                    "cloudformation:DescribeStacks",
                    f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/novapod-*",
                ),
                Statement("Deny", ("cloudformation:Describe*",), (STACK_ARN + "other/*",)),
            ),
        )
    )
    assert cfn.describe_stacks(StackName="novapod-data")["Stacks"][0]["StackId"] == stack_id
    assert cfn.describe_stacks(StackName=stack_id)["Stacks"][0]["StackName"] == "novapod-data"
    assert error_of(lambda: cfn.describe_stacks(StackName="other")) == (
        403,
        {
            "Type": "Sender",
            "Code": "AccessDenied",
            "Message": f"User: {ROLE} is not authorized to perform: cloudformation:DescribeStacks"
            f" on resource: {STACK_ARN}other/* with an explicit deny in an identity-based policy",
        },
    )
    # Without a name: DescribeStacks on '*' and ListStacks on every stack.
    assert error_of(cfn.describe_stacks)[1]["Message"] == (
        f"User: {ROLE} is not authorized to perform: cloudformation:DescribeStacks on resource: "
        "* because no identity-based policy allows the cloudformation:DescribeStacks action"
    )
    world.plane.act_as(Principal("Launcher", (allow("cloudformation:DescribeStacks", "*"),)))
    assert error_of(cfn.describe_stacks)[1]["Message"] == (
        f"User: {ROLE} is not authorized to perform: cloudformation:ListStacks on resource: "
        f"{STACK_ARN}*/* because no identity-based policy allows the cloudformation:ListStacks "
        "action"
    )
    # A missing stack is still looked up after the permission.
    assert error_of(lambda: cfn.describe_stacks(StackName="novapod-gone"))[1]["Message"] == (
        "Stack with id novapod-gone does not exist"
    )


# --- S3 ----------------------------------------------------------------------------------

# Keys a URL must encode: a space, '=', '+', unicode; botocore quotes them in the path.
AWKWARD_KEYS = ["runs/a b/results=1.json", "runs/é ü/ñ.json", "runs/x+y.json"]


def test_get_and_head_object_answer_bytes_and_metadata(world: World, s3: Any) -> None:
    for key in AWKWARD_KEYS:
        world.plane.put_object("novapod-out", key, key.encode() * 2, WRITTEN)
    for key in AWKWARD_KEYS:
        body = key.encode() * 2
        got = s3.get_object(Bucket="novapod-out", Key=key)
        assert got["Body"].read() == body
        head = s3.head_object(Bucket="novapod-out", Key=key)
        for answer in (got, head):
            assert answer["ContentLength"] == len(body)
            assert answer["ETag"] == f'"{hashlib.md5(body).hexdigest()}"'
            assert answer["LastModified"] == WRITTEN
            assert answer["ContentType"] == "binary/octet-stream"
            assert answer["AcceptRanges"] == "bytes"
    assert [(c["Bucket"], c["Key"]) for c in world.plane.calls_to("GetObject")] == [
        ("novapod-out", key) for key in AWKWARD_KEYS
    ]
    assert [c["Key"] for c in world.plane.calls_to("HeadObject")] == AWKWARD_KEYS


def keys_of(page: dict[str, Any]) -> list[str]:
    return [c["Key"] for c in page.get("Contents", [])]


def test_list_objects_v2_pages_a_prefix_in_binary_order(world: World, s3: Any) -> None:
    for key in [*AWKWARD_KEYS, "runs/b.json", "runs/a.json", "other/c.json"]:
        world.plane.put_object("novapod-out", key, b"{}", WRITTEN)
    pages = list(
        s3.get_paginator("list_objects_v2").paginate(
            Bucket="novapod-out", Prefix="runs/", PaginationConfig={"PageSize": 2}
        )
    )
    # UTF-8 binary order: ' ' < '.' < letters < 'é'.
    assert [keys_of(p) for p in pages] == [
        ["runs/a b/results=1.json", "runs/a.json"],
        ["runs/b.json", "runs/x+y.json"],
        ["runs/é ü/ñ.json"],
    ]
    assert [(p["KeyCount"], p["MaxKeys"], p["IsTruncated"]) for p in pages] == [
        (2, 2, True),
        (2, 2, True),
        (1, 2, False),
    ]
    assert "NextContinuationToken" not in pages[-1]
    assert pages[1]["ContinuationToken"] == pages[0]["NextContinuationToken"]
    (first,) = pages[0]["Contents"][:1]
    assert first == {
        "Key": "runs/a b/results=1.json",
        "LastModified": WRITTEN,
        "ETag": f'"{hashlib.md5(b"{}").hexdigest()}"',
        "Size": 2,
        "StorageClass": "STANDARD",
    }
    calls = world.plane.calls_to("ListObjectsV2")
    assert [(c["Prefix"], c["MaxKeys"], c.get("ContinuationToken")) for c in calls] == [
        ("runs/", 2, None),
        ("runs/", 2, pages[0]["NextContinuationToken"]),
        ("runs/", 2, pages[1]["NextContinuationToken"]),
    ]
    after = s3.list_objects_v2(Bucket="novapod-out", StartAfter="runs/b.json", Prefix="runs/")
    assert keys_of(after) == ["runs/x+y.json", "runs/é ü/ñ.json"]
    assert after["StartAfter"] == "runs/b.json"


def test_a_delimiter_rolls_keys_into_common_prefixes(world: World, s3: Any) -> None:
    for key in ["eval/a b/results_1.json", "eval/a b/results_2.json", "eval/é/r.json"]:
        world.plane.put_object("novapod-out", key, b"1", WRITTEN)
    world.plane.put_object("novapod-out", "eval/index.json", b"1", WRITTEN)
    listed = s3.list_objects_v2(Bucket="novapod-out", Prefix="eval/", Delimiter="/")
    assert keys_of(listed) == ["eval/index.json"]
    assert listed["CommonPrefixes"] == [{"Prefix": "eval/a b/"}, {"Prefix": "eval/é/"}]
    assert listed["KeyCount"] == 3  # keys and common prefixes alike
    pages = list(
        s3.get_paginator("list_objects_v2").paginate(
            Bucket="novapod-out",
            Prefix="eval/",
            Delimiter="/",
            PaginationConfig={"PageSize": 1},
        )
    )
    assert [(p.get("CommonPrefixes", []), keys_of(p)) for p in pages] == [
        ([{"Prefix": "eval/a b/"}], []),
        ([], ["eval/index.json"]),
        ([{"Prefix": "eval/é/"}], []),
    ]
    # Asked for without botocore's decoding, keys come URL-encoded as S3 sends them.
    raw = s3.list_objects_v2(Bucket="novapod-out", Prefix="eval/a b/", EncodingType="url")
    assert keys_of(raw) == ["eval/a+b/results_1.json", "eval/a+b/results_2.json"]
    assert raw["Prefix"] == "eval/a+b/"


def test_s3_errors_are_the_services(world: World, s3: Any) -> None:
    world.plane.add_bucket("novapod-out")
    assert "Contents" not in s3.list_objects_v2(Bucket="novapod-out")
    assert error_of(lambda: s3.get_object(Bucket="novapod-out", Key="runs/a b.json")) == (
        404,
        {
            "Code": "NoSuchKey",
            "Message": "The specified key does not exist.",
            "Key": "runs/a b.json",
        },
    )
    # HEAD answers carry no body: botocore names the error by its status.
    assert error_of(lambda: s3.head_object(Bucket="novapod-out", Key="x")) == (
        404,
        {"Code": "404", "Message": "Not Found"},
    )
    for call in (
        lambda: s3.get_object(Bucket="novapod-nope", Key="x"),
        lambda: s3.list_objects_v2(Bucket="novapod-nope"),
    ):
        assert error_of(call) == (
            404,
            {
                "Code": "NoSuchBucket",
                "Message": "The specified bucket does not exist",
                "BucketName": "novapod-nope",
            },
        )
    assert error_of(lambda: s3.head_object(Bucket="novapod-nope", Key="x"))[1]["Code"] == "404"
    assert error_of(
        lambda: s3.list_objects_v2(Bucket="novapod-out", ExpectedBucketOwner="999999999999")
    ) == (403, {"Code": "AccessDenied", "Message": "Access Denied"})
    assert error_of(lambda: s3.list_objects_v2(Bucket="novapod-out", ContinuationToken="%%")) == (
        400,
        {"Code": "InvalidArgument", "Message": "The continuation token provided is incorrect"},
    )


def test_what_the_fake_does_not_serve_is_refused_not_ignored(world: World, s3: Any) -> None:
    world.plane.put_object("novapod-out", "k", b"0123456789")
    # A Range answered with the whole object would hide a bug; the fake says so instead.
    assert error_of(lambda: s3.get_object(Bucket="novapod-out", Key="k", Range="bytes=0-1")) == (
        501,
        {"Code": "NotImplemented", "Message": "The fake does not serve Range."},
    )
    # Routed by the model: ?acl is GetObjectAcl, not GetObject.
    assert error_of(lambda: s3.get_object_acl(Bucket="novapod-out", Key="k")) == (
        501,
        {"Code": "NotImplemented", "Message": "The fake does not serve S3 GetObjectAcl."},
    )
    assert world.plane.operations() == ["GetObject", "GetObjectAcl"]


def test_s3_faults(world: World, s3: Any) -> None:
    world.plane.put_object("novapod-out", "k", b"v")
    world.plane.throttle("GetObject")
    world.plane.server_error("ListObjectsV2")
    world.plane.error("GetObject", "AccessDenied", status=403, message="Access Denied")
    world.plane.throttle("HeadObject")
    assert error_of(lambda: s3.get_object(Bucket="novapod-out", Key="k")) == (
        503,
        {"Code": "SlowDown", "Message": "Please reduce your request rate."},
    )
    assert error_of(lambda: s3.list_objects_v2(Bucket="novapod-out")) == (
        500,
        {"Code": "InternalError", "Message": "We encountered an internal error. Please try again."},
    )
    assert error_of(lambda: s3.get_object(Bucket="novapod-out", Key="k")) == (
        403,
        {"Code": "AccessDenied", "Message": "Access Denied"},
    )
    assert error_of(lambda: s3.head_object(Bucket="novapod-out", Key="k")) == (
        503,
        {"Code": "503", "Message": "Service Unavailable"},
    )
    assert s3.get_object(Bucket="novapod-out", Key="k")["Body"].read() == b"v"


def test_s3_calls_are_authorized_as_the_service_authorizes_them(world: World, s3: Any) -> None:
    world.plane.put_object("novapod-out", "eval/a b/results_1.json", b"{}")
    world.plane.put_object("novapod-out", "secret/k", b"{}")
    reader = Principal(
        "Launcher",
        (
            allow("s3:GetObject", "arn:aws:s3:::novapod-out/eval/*"),
            allow("s3:ListBucket", "arn:aws:s3:::novapod-out", StringLike={"s3:prefix": "eval/*"}),
        ),
    )
    world.plane.act_as(reader)
    assert s3.get_object(Bucket="novapod-out", Key="eval/a b/results_1.json")["Body"].read() == (
        b"{}"
    )
    assert keys_of(s3.list_objects_v2(Bucket="novapod-out", Prefix="eval/")) == [
        "eval/a b/results_1.json"
    ]
    assert error_of(lambda: s3.get_object(Bucket="novapod-out", Key="secret/k")) == (
        403,
        {
            "Code": "AccessDenied",
            "Message": f"User: {ROLE} is not authorized to perform: s3:GetObject on resource: "
            '"arn:aws:s3:::novapod-out/secret/k" because no identity-based policy allows the '
            "s3:GetObject action",
        },
    )
    # s3:prefix is absent without a Prefix, so the condition does not hold.
    assert error_of(lambda: s3.list_objects_v2(Bucket="novapod-out"))[1]["Message"] == (
        f"User: {ROLE} is not authorized to perform: s3:ListBucket on resource: "
        '"arn:aws:s3:::novapod-out" because no identity-based policy allows the s3:ListBucket '
        "action"
    )
    assert error_of(lambda: s3.head_object(Bucket="novapod-out", Key="secret/k")) == (
        403,
        {"Code": "403", "Message": "Forbidden"},
    )
    # A missing key: NoSuchKey only with s3:ListBucket on the bucket, else AccessDenied.
    assert error_of(lambda: s3.get_object(Bucket="novapod-out", Key="eval/none.json")) == (
        403,
        {"Code": "AccessDenied", "Message": "Access Denied"},
    )
    world.plane.act_as(
        Principal("Launcher", (*reader.statements, allow("s3:ListBucket", "arn:aws:s3:::*")))
    )
    assert error_of(lambda: s3.get_object(Bucket="novapod-out", Key="eval/none.json"))[1][
        "Code"
    ] == ("NoSuchKey")
