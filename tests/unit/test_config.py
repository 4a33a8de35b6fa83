"""Config validation: each mistake yields a ConfigError naming its field path."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from novapod.config import (
    ALL_ENDPOINTS,
    GATEWAY_ENDPOINTS,
    RIG_ENDPOINTS,
    ConfigError,
    NovapodConfig,
    json_schema,
    load_config,
    parse_config,
)
from tests.conftest import ALL_CONFIGS

VALID: dict[str, Any] = {
    "name": "dev",
    "region": "us-east-1",
    "network": {"vpc": {"cidr": "10.0.0.0/16", "zone_ids": ["use1-az4", "use1-az6"]}},
}
EXISTING = {
    "vpc_id": "vpc-0123456789abcdef0",
    "cidr": "10.1.0.0/16",
    "private_subnets": [
        {"subnet_id": "subnet-00000001", "zone_id": "use1-az1", "route_table_id": "rtb-00000001"},
        {"subnet_id": "subnet-00000002", "zone_id": "use1-az2", "route_table_id": "rtb-00000002"},
    ],
}


def with_(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    data = copy.deepcopy(base or VALID)
    node = data
    *parents, leaf = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    if value is _DELETE:
        del node[leaf]
    else:
        node[leaf] = value
    return data


_DELETE = object()


def errors_of(data: Any) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        parse_config(data)
    return info.value.issues


MISTAKES = [
    # (case id, data, expected path, words the message must contain)
    ("name-uppercase", with_("name", "Dev"), "name", "does not match"),
    ("name-missing", with_("name", _DELETE), "name", "required"),
    ("region-missing", with_("region", _DELETE), "region", "required"),
    ("account-short", with_("account", "1234"), "account", "does not match"),
    ("unknown-top-key", with_("netwrok", {}), "netwrok", "unknown key"),
    ("unknown-nested-key", with_("network.vpc.zones", ["use1-az1"]), "network.vpc.zones", "unknown key"),
    ("zone-name-not-id", with_("network.vpc.zone_ids", ["us-east-1a", "use1-az6"]), "network.vpc.zone_ids[0]", "does not match"),
    ("one-zone", with_("network.vpc.zone_ids", ["use1-az4"]), "network.vpc.zone_ids", "at least 2"),
    ("zone-twice", with_("network.vpc.zone_ids", ["use1-az4", "use1-az4"]), "network.vpc.zone_ids", "repeated: use1-az4"),
    ("zone-other-region", with_("network.vpc.zone_ids", ["use1-az4", "usw2-az1"]), "network.vpc.zone_ids[1]", "not a zone of us-east-1"),
    ("cidr-invalid", with_("network.vpc.cidr", "10.0.0.1/16"), "network.vpc.cidr", "not an IPv4 network"),
    ("cidr-too-small", with_("network.vpc.cidr", "10.0.0.0/25"), "network.vpc.cidr", "between /16 and /24"),
    ("subnets-dont-fit", with_("network.vpc.cidr", "10.0.0.0/20"), "network.vpc.cidr", "cannot hold 2 private /20"),
    ("private-subnet-too-small", with_("network.vpc.private_subnet_prefix", 24), "network.vpc.private_subnet_prefix", "use /21"),
    ("nat-mode", with_("network.vpc.nat_gateways", "two"), "network.vpc.nat_gateways", "'two' is not allowed"),
    ("no-vpc-choice", with_("network", {}), "network", "exactly one of network.vpc"),
    ("both-vpc-choices", with_("network.existing_vpc", EXISTING), "network", "exactly one"),
    ("closed-missing-endpoints", with_("network.closed", True, with_("network.endpoints", ["s3", "sts"])), "network.endpoints", "add ecr.api"),
    ("unknown-endpoint", with_("network.endpoints", ["s3", "kinesis"]), "network.endpoints[1]", "'kinesis' is not allowed"),
    ("endpoint-twice", with_("network.endpoints", ["sts", "sts"]), "network.endpoints", "listed twice: sts"),
    ("flow-log-retention", with_("network.flow_logs.retention_days", 100), "network.flow_logs.retention_days", "nearest is 90"),
    ("closed-not-bool", with_("network.closed", "maybe"), "network.closed", "true or false"),
    ("existing-one-zone", {**VALID, "network": {"existing_vpc": {**EXISTING, "private_subnets": [EXISTING["private_subnets"][0], {**EXISTING["private_subnets"][1], "zone_id": "use1-az1"}]}}}, "network.existing_vpc", "two zone IDs"),
    ("existing-bad-subnet-id", {**VALID, "network": {"existing_vpc": {**EXISTING, "private_subnets": [{"subnet_id": "sub-1", "zone_id": "use1-az1"}, EXISTING["private_subnets"][1]]}}}, "network.existing_vpc.private_subnets[0].subnet_id", "does not match"),
    ("existing-no-route-table", {**VALID, "network": {"existing_vpc": {**EXISTING, "private_subnets": [{"subnet_id": "subnet-00000001", "zone_id": "use1-az1"}, EXISTING["private_subnets"][1]]}}}, "network.existing_vpc.private_subnets[0].route_table_id", "S3 gateway endpoint"),
    ("lustre-size", with_("storage.lustre", {"storage_capacity_gib": 3600}), "storage.lustre.storage_capacity_gib", "1200 or a multiple of 2400"),
    ("lustre-throughput", with_("storage.lustre", {"throughput_per_unit": 200}), "storage.lustre.throughput_per_unit", "125, 250, 500, 1000"),
    ("lustre-zone", with_("storage.lustre", {"zone_id": "use1-az1"}), "storage.lustre.zone_id", "has no private subnet"),
    ("noncurrent-days", with_("storage.noncurrent_version_days", 0), "storage.noncurrent_version_days", "at least 1"),
    ("tags-not-mapping", with_("tags", ["a"]), "tags", "a mapping"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "path", "words"), [m[1:] for m in MISTAKES], ids=[m[0] for m in MISTAKES]
)
def test_mistake_is_reported_at_its_field(data: dict[str, Any], path: str, words: str) -> None:
    issues = errors_of(data)
    paths = [p for p, _ in issues]
    assert path in paths, issues
    message = dict(issues)[path]
    assert words in message, message


def test_mistakes_are_distinct() -> None:
    assert len({(m[2], m[3]) for m in MISTAKES}) >= 15


def test_all_errors_are_reported_together() -> None:
    data = with_("name", "BAD", with_("network.vpc.nat_gateways", "x"))
    paths = {p for p, _ in errors_of(data)}
    assert {"name", "network.vpc.nat_gateways"} <= paths


def test_render_is_one_line_per_issue() -> None:
    error = ConfigError([("a.b", "first"), ("c[0]", "second")])
    assert error.render() == "a.b: first\nc[0]: second"


def test_top_level_must_be_a_mapping() -> None:
    assert errors_of(["name"]) == [
        ("", "the configuration must be a YAML mapping with name, region and network")
    ]


def test_yaml_syntax_error_names_line(tmp_path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: dev\nregion: [us-east-1\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "line 3" in info.value.render() or "line 2" in info.value.render()


def test_defaults() -> None:
    config = parse_config(VALID)
    assert config.network.endpoint_names == GATEWAY_ENDPOINTS + RIG_ENDPOINTS
    assert config.network.vpc is not None
    assert config.network.vpc.private_subnet_prefix == 20
    assert config.network.flow_logs.retention_days == 365
    assert config.storage.lustre is None
    assert config.prefix == "novapod-dev"


def test_closed_network_gets_every_endpoint() -> None:
    config = parse_config(with_("network.closed", True))
    assert config.network.endpoint_names == ALL_ENDPOINTS
    assert "lambda" in config.network.endpoint_names and "sqs" in config.network.endpoint_names


def test_explicit_endpoints_keep_canonical_order() -> None:
    config = parse_config(with_("network.endpoints", ["sts", "s3"]))
    assert config.network.endpoint_names == ("s3", "sts")


def test_config_is_frozen() -> None:
    config = parse_config(VALID)
    with pytest.raises(Exception, match="frozen"):
        config.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_shipped_configs_are_valid(path) -> None:
    assert isinstance(load_config(path), NovapodConfig)


def test_default_config_is_account_agnostic_and_buys_nothing() -> None:
    config = load_config(ALL_CONFIGS[0])
    assert config.account is None


def test_json_schema_describes_the_model() -> None:
    schema = json_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    assert set(schema["required"]) == {"name", "region", "network"}
    assert schema["additionalProperties"] is False


# --------------------------------------------------------------------- property-based

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 70000), st.text(max_size=12),
    st.sampled_from(["use1-az4", "10.0.0.0/16", "vpc-12345678", "s3", "single", "dev"]),
)  # fmt: skip
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(["vpc", "cidr", "zone_ids", "closed", "name", "x"]), inner, max_size=4
        ),
    ),
    max_leaves=12,
)
_keys = st.sampled_from(
    [
        "name",
        "region",
        "account",
        "tags",
        "network",
        "storage",
        "capacity",
        "eks",
        "hyperpod",
        "extra",
    ]
)


def _mutations() -> st.SearchStrategy[dict[str, Any]]:
    paths = [
        "name", "region", "account", "tags", "network", "network.vpc", "network.vpc.cidr",
        "network.vpc.zone_ids", "network.vpc.private_subnet_prefix", "network.closed",
        "network.endpoints", "network.flow_logs", "storage", "storage.lustre",
        "storage.lustre.storage_capacity_gib", "network.existing_vpc",
        "capacity", "capacity.workloads", "capacity.training_plans", "eks",
        "eks.kubernetes_version", "eks.admin_principals", "hyperpod",
        "hyperpod.restricted_instance_groups", "hyperpod.instance_groups",
    ]  # fmt: skip
    return st.builds(
        _apply,
        st.lists(st.tuples(st.sampled_from(paths), _values), max_size=3),
    )


# A valid environment with every section, so random edits reach the cross-checks.
FULL: dict[str, Any] = {
    **VALID,
    "capacity": {
        "workloads": [
            {
                "name": "sft",
                "model": "lite",
                "technique": "sft-lora",
                "hours_per_run": 10,
                "plan": "main",
            }
        ],
        "training_plans": [
            {"name": "main", "purchase": {"approve": True, "max_upfront_fee": "100"}}
        ],
    },
    "eks": {},
    "hyperpod": {"restricted_instance_groups": [{"name": "rig", "training_plan": "main"}]},
}


def _apply(edits: list[tuple[str, Any]], base: dict[str, Any] | None = None) -> dict[str, Any]:
    data = copy.deepcopy(base or VALID)
    for path, value in edits:
        try:
            data = with_(path, value, data)
        except (AttributeError, TypeError):
            continue
    return data


def test_full_example_is_valid() -> None:
    assert parse_config(FULL).hyperpod is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "capacity.workloads",
                    "capacity.training_plans",
                    "eks",
                    "eks.kubernetes_version",
                    "eks.endpoint",
                    "eks.public_access_cidrs",
                    "hyperpod",
                    "hyperpod.restricted_instance_groups",
                    "hyperpod.instance_groups",
                    "hyperpod.node_recovery",
                    "tags",
                    "network.endpoints",
                ]
            ),
            _values,
        ),
        max_size=3,
    )
)
def test_random_edits_of_a_full_config_give_config_or_config_error(edits) -> None:
    _check(_apply(edits, FULL))


def _check(data: Any) -> None:
    try:
        config = parse_config(data)
    except ConfigError as error:
        assert error.issues, "a ConfigError must carry at least one issue"
        for path, message in error.issues:
            assert isinstance(path, str) and isinstance(message, str) and message
            assert "Traceback" not in message
        return
    assert isinstance(config, NovapodConfig)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_keys, _values, max_size=6))
def test_random_documents_give_config_or_config_error(data: dict[str, Any]) -> None:
    _check(data)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_mutations())
def test_random_edits_of_a_valid_config_give_config_or_config_error(data: dict[str, Any]) -> None:
    _check(data)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_random_yaml_text_gives_config_or_config_error(tmp_path_factory, text: str) -> None:
    path = tmp_path_factory.mktemp("yaml") / "c.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        load_config(path)
    except ConfigError as error:
        assert error.issues


def test_round_trip_through_yaml() -> None:
    text = yaml.safe_dump(VALID)
    assert parse_config(yaml.safe_load(text)) == parse_config(VALID)


# --------------------------------------------------------------------------- capacity

SFT = {
    "name": "sft",
    "model": "lite",
    "technique": "sft-lora",
    "hours_per_run": 10,
    "runs": 3,
    "plan": "main",
}
APPROVED = {"approve": True, "max_upfront_fee": "20000"}
ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/my-plan"


def with_capacity(capacity: dict[str, Any]) -> dict[str, Any]:
    return {**VALID, "capacity": capacity}


@pytest.mark.parametrize(
    "purchase",
    [None, {"approve": False, "max_upfront_fee": "1"}, {"approve": True}],
    ids=["missing", "not-approved", "no-cap"],
)
def test_buying_needs_explicit_approval_and_a_cap(purchase) -> None:
    plan: dict[str, Any] = {"name": "main"}
    if purchase is not None:
        plan["purchase"] = purchase
    issues = dict(errors_of(with_capacity({"workloads": [SFT], "training_plans": [plan]})))
    message = issues["capacity.training_plans[0].purchase"]
    assert "non-refundable purchase" in message
    assert "novapod offerings CONFIG --plan main" in message


def test_approved_purchase_resolves_to_a_request() -> None:
    config = parse_config(
        with_capacity(
            {"workloads": [SFT], "training_plans": [{"name": "main", "purchase": APPROVED}]}
        )
    )
    ((spec, request),) = config.training_plan_requests()
    assert spec.purchase is not None and str(spec.purchase.max_upfront_fee) == "20000"
    assert (request.instance_type, request.instance_count, request.duration_hours) == (
        "ml.p5.48xlarge",
        4,
        48,
    )


def test_workloads_without_listed_plans_buy_nothing() -> None:
    config = parse_config(with_capacity({"workloads": [{**SFT, "plan": None}]}))
    assert config.training_plan_requests() == []
    assert [p.name for p in config.capacity_plan().training_plans] == ["p5-48xlarge"]


@pytest.mark.parametrize(
    ("capacity", "path", "words"),
    [
        (
            {"training_plans": [{"name": "own", "existing_arn": ARN}]},
            "capacity.training_plans[0].instance_type",
            "an adopted plan needs it",
        ),
        (
            {
                "training_plans": [
                    {
                        "name": "own",
                        "existing_arn": ARN,
                        "instance_type": "ml.p5.48xlarge",
                        "instance_count": 4,
                        "purchase": APPROVED,
                    }
                ]
            },
            "capacity.training_plans[0].purchase",
            "never bought",
        ),
        (
            {
                "training_plans": [
                    {
                        "name": "own",
                        "existing_arn": "arn:aws:s3:::bucket",
                        "instance_type": "ml.p5.48xlarge",
                        "instance_count": 4,
                    }
                ]
            },
            "capacity.training_plans[0].existing_arn",
            "does not match",
        ),
        (
            {
                "workloads": [SFT],
                "training_plans": [{"name": "main", "instance_count": 2, "purchase": APPROVED}],
            },
            "capacity.training_plans[0]",
            "smaller than the 4 instances",
        ),
        (
            {"workloads": [SFT, SFT], "training_plans": [{"name": "main", "purchase": APPROVED}]},
            "capacity.workloads",
            "repeated: sft",
        ),
        (
            {"workloads": [{**SFT, "technique": "rlhf"}]},
            "capacity.workloads[0].technique",
            "'rlhf' is not allowed",
        ),
        (
            {"workloads": [{**SFT, "sequence_length": 200000}]},
            "capacity.workloads[0]",
            "sequence_length",
        ),
        (
            {
                "workloads": [SFT],
                "training_plans": [{"name": "main", "purchase": {**APPROVED, "currency": "usd"}}],
            },
            "capacity.training_plans[0].purchase.currency",
            "does not match",
        ),
        (
            {
                "workloads": [SFT],
                "training_plans": [
                    {"name": "main", "purchase": {**APPROVED, "max_upfront_fee": "-5"}}
                ],
            },
            "capacity.training_plans[0].purchase.max_upfront_fee",
            "more than 0",
        ),
        (
            {
                "workloads": [SFT],
                "training_plans": [
                    {"name": "main", "start_after": "2027-01-01", "purchase": APPROVED}
                ],
            },
            "capacity.training_plans[0].start_after",
            "",
        ),
        ({"pending_timeout_minutes": 90}, "capacity.pending_timeout_minutes", "at most 55"),
    ],
    ids=[
        "adopt-needs-type",
        "adopt-and-buy",
        "bad-arn",
        "count-too-small",
        "dup-workload",
        "technique",
        "sequence",
        "currency",
        "fee",
        "naive-time",
        "timeout",
    ],
)
def test_capacity_mistakes(capacity, path, words) -> None:
    issues = dict(errors_of(with_capacity(capacity)))
    assert path in issues, issues
    assert words in issues[path]


# ------------------------------------------------------------------- EKS, HyperPod

PLANNED = {
    "workloads": [SFT],
    "training_plans": [{"name": "main", "purchase": APPROVED}],
}


def with_cluster(
    hyperpod: dict[str, Any] | None, eks: dict[str, Any] | None = None, capacity=PLANNED
) -> dict[str, Any]:
    data = {**VALID, "capacity": capacity, "eks": {} if eks is None else eks}
    if hyperpod is not None:
        data["hyperpod"] = hyperpod
    return data


RIG = {"name": "rig", "training_plan": "main"}


@pytest.mark.parametrize(
    ("data", "path", "words"),
    [
        (
            {**with_cluster(None), "network": {**VALID["network"], "closed": True}},
            "network.closed",
            "cannot reach",
        ),
        (
            {**VALID, "hyperpod": {"restricted_instance_groups": [RIG]}, "capacity": PLANNED},
            "hyperpod",
            "add an eks section",
        ),
        (
            with_cluster({"restricted_instance_groups": [{**RIG, "training_plan": "other"}]}),
            "hyperpod.restricted_instance_groups[0].training_plan",
            "not in capacity.training_plans",
        ),
        (
            with_cluster(
                {"restricted_instance_groups": [{**RIG, "instance_type": "ml.p4d.24xlarge"}]}
            ),
            "hyperpod.restricted_instance_groups[0].instance_type",
            "differs from plan main's ml.p5.48xlarge",
        ),
        (
            with_cluster({"restricted_instance_groups": [{**RIG, "instance_count": 8}]}),
            "hyperpod.restricted_instance_groups[0].instance_count",
            "exceeds the 4 instances of plan main",
        ),
        (
            with_cluster({"restricted_instance_groups": [RIG, {**RIG, "name": "rig2"}]}),
            "hyperpod.restricted_instance_groups[1].training_plan",
            "already serves rig",
        ),
        (
            with_cluster(
                {
                    "restricted_instance_groups": [RIG],
                    "instance_groups": [
                        {"name": "rig", "instance_type": "ml.m5.2xlarge", "instance_count": 1}
                    ],
                }
            ),
            "hyperpod",
            "repeated: rig",
        ),
        (with_cluster({}), "hyperpod", "at least one instance group"),
        (
            with_cluster({"restricted_instance_groups": [{**RIG, "fsx_size_gib": 2000}]}),
            "hyperpod.restricted_instance_groups[0].fsx_size_gib",
            "up to 100800",
        ),
        (
            with_cluster({"restricted_instance_groups": [{**RIG, "name": "Rig_1"}]}),
            "hyperpod.restricted_instance_groups[0].name",
            "does not match",
        ),
        (
            with_cluster(None, eks={"kubernetes_version": "1.28"}),
            "eks.kubernetes_version",
            "outside what HyperPod supports",
        ),
        (
            with_cluster(None, eks={"kubernetes_version": "1.32"}),
            "eks.kubernetes_version",
            "no pinned add-on versions for 1.32",
        ),
        (
            with_cluster(None, eks={"endpoint": "public-and-private"}),
            "eks.public_access_cidrs",
            "allow-list",
        ),
        (
            with_cluster(
                None, eks={"endpoint": "public-and-private", "public_access_cidrs": ["0.0.0.0/0"]}
            ),
            "eks.public_access_cidrs",
            "opens the API endpoint",
        ),
        (
            with_cluster(None, eks={"admin_principals": ["arn:aws:iam::123:role/x"]}),
            "eks.admin_principals[0]",
            "does not match",
        ),
        (
            with_cluster(
                {"restricted_instance_groups": [RIG]},
                capacity={
                    **PLANNED,
                    "training_plans": [
                        {"name": "main", "target_resources": ["training-job"], "purchase": APPROVED}
                    ],
                },
            ),
            "hyperpod.restricted_instance_groups[0].training_plan",
            "not bought for hyperpod-cluster",
        ),
    ],
    ids=[
        "closed-with-eks",
        "no-eks",
        "unknown-plan",
        "type-mismatch",
        "count-exceeds",
        "plan-twice",
        "dup-group",
        "no-groups",
        "fsx-size",
        "group-name",
        "k8s-old",
        "k8s-unpinned",
        "public-no-cidrs",
        "public-any",
        "principal",
        "training-job-plan",
    ],
)
def test_cluster_mistakes(data, path, words) -> None:
    issues = dict(errors_of(data))
    assert path in issues, issues
    assert words in issues[path]


def test_rig_outside_known_regions_warns() -> None:
    data = with_cluster({"restricted_instance_groups": [RIG]})
    assert parse_config(data).warnings() == []
    data = {
        **data,
        "region": "ca-central-1",
        "network": {"vpc": {"zone_ids": ["cac1-az1", "cac1-az2"]}},
    }
    (warning,) = parse_config(data).warnings()
    assert warning.startswith("region: restricted instance groups have been seen only in us-east-1")


@pytest.mark.parametrize(
    ("data", "path", "words"),
    [
        ({**VALID, "tags": {"aws:owner": "me"}}, "tags", "aws: prefix is reserved"),
        ({**VALID, "tags": {"team": "ml;rm -rf"}}, "tags.team", "does not match"),
        (
            with_cluster(None, eks={"admin_principals": ["arn:aws:iam::111122223333:role/A"] * 2}),
            "eks.admin_principals",
            "listed twice",
        ),
        (
            with_capacity(
                {
                    "training_plans": [
                        {
                            "name": "p",
                            "instance_type": "ml.p5.2xlarge",
                            "instance_count": 1,
                            "duration_hours": 24,
                            "purchase": APPROVED,
                        }
                    ]
                }
            ),
            "capacity.training_plans[0].instance_type",
            "do not sell ml.p5.2xlarge",
        ),
        (
            with_cluster(
                {
                    "instance_groups": [
                        {"name": "cpu", "instance_type": "ml.r5.24xlarge", "instance_count": 1}
                    ]
                }
            ),
            "hyperpod.instance_groups[0].instance_type",
            "not a HyperPod instance type",
        ),
        (
            {
                **with_cluster({"restricted_instance_groups": [RIG]}),
                "network": {**VALID["network"], "endpoints": ["s3", "sts"]},
            },
            "network.endpoints",
            "add ecr.api, ecr.dkr",
        ),
    ],
    ids=["aws-tag", "tag-chars", "dup-admin", "plan-type", "group-type", "rig-endpoints"],
)
def test_service_limits(data, path, words) -> None:
    issues = dict(errors_of(data))
    assert path in issues, issues
    assert words in issues[path]
