"""Config validation: each mistake yields a ConfigError naming its field path."""

from __future__ import annotations

import copy
from datetime import UTC, date, datetime
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from novapod import yamlsafe
from novapod.config import (
    ConfigError,
    NovapodConfig,
    json_schema,
    load_config,
    parse_config,
)
from tests.conftest import ALL_CONFIGS, ROOT
from tests.unit.golden import SFT, SFT_PLAN

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
    ("zone-name-not-id", with_("network.vpc.zone_ids", ["us-east-1a", "use1-az6"]), "network.vpc.zone_ids[0]", "is a zone name; use the zone ID"),
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
    # Written out: a table the code reads cannot vouch for itself.
    assert config.network.endpoint_names == (
        "s3", "ecr.api", "ecr.dkr", "sts", "logs", "monitoring", "eks", "eks-auth", "ssm",
        "ssmmessages", "ec2messages",
    )  # fmt: skip
    assert config.network.vpc is not None
    assert config.network.vpc.private_subnet_prefix == 20
    assert config.network.flow_logs.retention_days == 365
    assert config.storage.lustre is None
    assert config.prefix == "novapod-dev"


def test_closed_network_gets_every_endpoint() -> None:
    config = parse_config(with_("network.closed", True))
    assert config.network.endpoint_names == (
        "s3", "ecr.api", "ecr.dkr", "sts", "logs", "monitoring", "eks", "eks-auth", "ssm",
        "ssmmessages", "ec2messages", "lambda", "sqs",
    )  # fmt: skip
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
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"  # what editors use
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
        "capacity", "jobs", "capacity.training_plans", "eks",
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
    "jobs": [
        {
            "name": "sft",
            "model": "lite",
            "technique": "sft-lora",
            "hours_per_run": 10,
            "instance_group": "rig",
            "data": {"train": "sft/train.jsonl"},
        }
    ],
    "capacity": {
        "training_plans": [
            {
                "name": "main",
                "purchase": {"approve": "novapod-dev-main-a4c1b161", "max_upfront_fee": "100"},
            }
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
                    "jobs",
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
        # Each issue names a field: a top-level key of the model or of the document
        # (an unknown key), or the whole document ("").
        known = set(NovapodConfig.model_fields) | (set(data) if isinstance(data, dict) else set())
        for path, message in error.issues:
            assert isinstance(path, str) and isinstance(message, str) and message
            assert "Traceback" not in message
            assert path.split(".")[0].split("[")[0] in known | {""}, path
        return
    # Accepted: what the document says is what the config holds.
    assert isinstance(config, NovapodConfig)
    assert (config.name, config.region) == (data["name"], data["region"])
    assert config.tags == data.get("tags", {})


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
        config = load_config(path)
    except ConfigError as error:
        assert error.issues
        # Every line names the file, and none is a traceback.
        for line in error.render().splitlines():
            assert line.startswith(f"{path}: ") and "Traceback" not in line
    else:  # only a complete environment parses
        assert yamlsafe.load(text)["name"] == config.name


def test_round_trip_through_yaml() -> None:
    text = yaml.safe_dump(VALID)
    assert parse_config(yamlsafe.load(text)) == parse_config(VALID)


# --------------------------------------------------------------------------- capacity

APPROVED = {"approve": SFT_PLAN, "max_upfront_fee": "20000"}
ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/my-plan"


def with_capacity(capacity: dict[str, Any]) -> dict[str, Any]:
    """VALID with this capacity section; a "jobs" entry goes to the root, where jobs live."""
    capacity = dict(capacity)
    jobs = capacity.pop("jobs", None)
    return {**VALID, "capacity": capacity, **({} if jobs is None else {"jobs": jobs})}


@pytest.mark.parametrize(
    ("purchase", "path"),
    [
        (None, "capacity.training_plans[0].purchase"),
        ({"approve": False, "max_upfront_fee": "1"}, "capacity.training_plans[0].purchase.approve"),
    ],
    ids=["missing", "not-approved"],
)
def test_buying_needs_explicit_approval_naming_the_plan(purchase, path) -> None:
    plan: dict[str, Any] = {"name": "main"}
    if purchase is not None:
        plan["purchase"] = purchase
    issues = dict(errors_of(with_capacity({"jobs": [SFT], "training_plans": [plan]})))
    message = issues[path]
    assert "non-refundable purchase" in message
    assert "novapod offerings CONFIG --plan main" in message
    assert f"set purchase.approve: {SFT_PLAN} (this exact plan)" in message


def test_buying_needs_a_fee_cap() -> None:
    plan = {"name": "main", "purchase": {"approve": SFT_PLAN}}
    issues = dict(errors_of(with_capacity({"jobs": [SFT], "training_plans": [plan]})))
    assert issues == {
        "capacity.training_plans[0].purchase.max_upfront_fee": (
            "required with approve: the highest up-front fee to pay for main, a plain number in "
            "USD (see `novapod offerings CONFIG --plan main` for prices)"
        )
    }


def test_approve_true_is_refused_with_the_name_to_paste() -> None:
    plan = {"name": "main", "purchase": {"approve": True, "max_upfront_fee": "1"}}
    issues = dict(errors_of(with_capacity({"jobs": [SFT], "training_plans": [plan]})))
    assert issues["capacity.training_plans[0].purchase.approve"] == (
        f"approve must name the exact purchase, not true: set approve: {SFT_PLAN} (the plan "
        "`novapod plan` shows and the stack buys); an edit that changes what is bought changes "
        "this name and needs a new approval"
    )


def _approval_error(capacity: dict[str, Any], name: str = "dev") -> str:
    issues = dict(errors_of({**with_capacity(capacity), "name": name}))
    return issues["capacity.training_plans[0].purchase.approve"]


@pytest.mark.parametrize(
    ("workload", "plan", "env", "new_name", "what"),
    [
        ({"runs": 4}, {}, "dev", SFT_PLAN, "a 40 h job still fits 48 h"),
        ({"runs": 5}, {}, "dev", "novapod-dev-main-721414fe", "duration_hours 48 -> 72"),
        ({}, {"instance_count": 8}, "dev", "novapod-dev-main-846caa3b", "instance_count 4 -> 8"),
        (
            {},
            {"end_before": "2027-03-01T00:00:00Z"},
            "dev",
            "novapod-dev-main-1f2f3f95",
            "end_before unset -> 2027-03-01T00:00:00+00:00",
        ),
        (
            {},
            {"target_resources": ["hyperpod-cluster", "training-job"]},
            "dev",
            "novapod-dev-main-addc1d35",
            "target_resources [hyperpod-cluster] -> [hyperpod-cluster, training-job]",
        ),
        ({}, {"retry": 1}, "dev", "novapod-dev-main-82d5d2f2", "retry 0 -> 1"),
        (
            {},
            {},
            "prod",
            "novapod-prod-main-951cd24c",
            "the environment was renamed from dev to prod",
        ),
    ],
    ids=["runs-same-days", "runs", "count", "window-end", "targets", "retry", "environment"],
)
def test_an_edit_that_changes_the_purchase_needs_a_new_approval(
    workload, plan, env, new_name, what
) -> None:
    """The approval of novapod-dev-main-951cd24c does not carry over to any other plan."""
    capacity = {
        "jobs": [{**SFT, **workload}],
        "training_plans": [{"name": "main", "purchase": APPROVED, **plan}],
    }
    if new_name == SFT_PLAN:  # an edit that keeps what is bought keeps the approval
        parse_config({**with_capacity(capacity), "name": env})
        return
    message = _approval_error(capacity, env)
    assert message.startswith(f"approves {SFT_PLAN} but this config buys {new_name} (")
    assert what in message
    assert "new non-refundable purchase of up to 20000 USD" in message
    assert f"{SFT_PLAN}, if it was bought, stays paid for" in message
    assert f"set approve: {new_name} to buy the new plan, or undo the edit" in message
    # Only a longer plan can be an extension of the approved one instead (tests/unit/
    # test_extension.py has the advice itself).
    assert ("extend that plan instead" in message) == what.startswith("duration_hours")


def test_runs_4_to_5_in_the_purchase_example_is_refused_until_approved_again() -> None:
    """The issue's scenario: one more run lengthens the plan, a second purchase."""
    data = yamlsafe.load((ROOT / "config" / "examples" / "single-rig-purchase.yaml").read_text())
    assert data["capacity"]["training_plans"][0]["purchase"]["approve"] == (
        "novapod-nova-lite-lite-sft-50d13e0b"
    )
    data["jobs"][0]["runs"] = 5
    issues = dict(errors_of(data))
    assert issues == {
        "capacity.training_plans[0].purchase.approve": (
            "approves novapod-nova-lite-lite-sft-50d13e0b but this config buys "
            "novapod-nova-lite-lite-sft-b165e94c (duration_hours 144 -> 168); that is a new "
            "non-refundable purchase of up to 60000 USD, and novapod-nova-lite-lite-sft-50d13e0b, "
            "if it was bought, stays paid for: set approve: novapod-nova-lite-lite-sft-b165e94c "
            "to buy the new plan, or undo the edit; or, since the edit only lengthens "
            "novapod-nova-lite-lite-sft-50d13e0b by 24 h, extend that plan instead of buying a "
            "second one: keep duration_hours: 144 and add extend: {duration_hours: 24, approve: "
            "novapod-nova-lite-lite-sft-50d13e0b-ext24h-c2dfa27d, max_upfront_fee: 10000} (the "
            "cap is the plan's pro rata; `aws sagemaker search-training-plan-offerings "
            "--training-plan-arn ARN --duration-hours 24` shows real prices once it is bought)"
        )
    }
    data["capacity"]["training_plans"][0]["purchase"]["approve"] = (
        "novapod-nova-lite-lite-sft-b165e94c"
    )
    assert parse_config(data).name == "nova-lite"


def test_guardrail_edits_keep_the_approval() -> None:
    """Raising the cap, another currency or choice policy changes nothing that is bought."""
    capacity = {
        "jobs": [SFT],
        "training_plans": [
            {
                "name": "main",
                "choice": "earliest",
                "purchase": {"approve": SFT_PLAN, "max_upfront_fee": "99999.50", "currency": "EUR"},
            }
        ],
    }
    assert parse_config(with_capacity(capacity)).name == "dev"


def test_a_window_that_has_ended_is_refused() -> None:
    now = datetime(2027, 3, 1, tzinfo=UTC)
    capacity = {
        "jobs": [SFT],
        "training_plans": [
            {"name": "main", "end_before": "2027-02-28T00:00:00Z", "purchase": APPROVED}
        ],
    }
    with pytest.raises(ConfigError) as caught:
        parse_config(with_capacity(capacity), now=now)
    assert caught.value.issues == [
        (
            "capacity.training_plans[0].end_before",
            "2027-02-28T00:00:00+00:00 is in the past, and no plan can be bought for a window "
            "that has ended: move the window, or adopt a plan you already bought with "
            "existing_arn",
        )
    ]


@pytest.mark.parametrize(
    ("purchase", "message"),
    [
        ({"currency": "usd"}, "currency codes are upper case; write USD"),
        ({"currency": "XYZ"}, "'XYZ' is not an ISO 4217 currency code such as USD or EUR"),
        ({"max_upfront_fee": float("inf")}, "must be a finite amount, e.g. 40000"),
        ({"max_upfront_fee": "Infinity"}, "'Infinity' is not an amount; write a plain number"),
        ({"max_upfront_fee": True}, "must be an amount, e.g. 40000, not true or false"),
        (
            {"max_upfront_fee": "$40,000"},
            "'$40,000' is not a plain number; write 40000 (the currency goes in purchase.currency)",
        ),
        ({"max_upfront_fee": "0"}, "must be more than 0"),
        ({"max_upfront_fee": "100.001"}, "2 decimal places"),
        ({"approve": "not a name!"}, "is not a training plan name; paste the name"),
    ],
)
def test_fee_cap_and_currency_are_checked(purchase, message) -> None:
    plan = {"name": "main", "purchase": {**APPROVED, **purchase}}
    issues = errors_of(with_capacity({"jobs": [SFT], "training_plans": [plan]}))
    assert len(issues) == 1
    path, text = issues[0]
    assert path.startswith("capacity.training_plans[0].purchase.")
    assert message in text


def test_approved_purchase_resolves_to_a_request() -> None:
    config = parse_config(
        with_capacity({"jobs": [SFT], "training_plans": [{"name": "main", "purchase": APPROVED}]})
    )
    ((spec, request),) = config.training_plan_requests()
    assert spec.purchase is not None and str(spec.purchase.max_upfront_fee) == "20000"
    assert (request.instance_type, request.instance_count, request.duration_hours) == (
        "ml.p5.48xlarge",
        4,
        48,
    )


def test_workloads_without_listed_plans_buy_nothing() -> None:
    config = parse_config(with_capacity({"jobs": [{**SFT, "plan": None}]}))
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
                "jobs": [SFT],
                "training_plans": [{"name": "main", "instance_count": 2, "purchase": APPROVED}],
            },
            "capacity.training_plans[0]",
            "smaller than the 4 instances",
        ),
        (
            {"jobs": [SFT, SFT], "training_plans": [{"name": "main", "purchase": APPROVED}]},
            "jobs",
            "repeated: sft",
        ),
        (
            {"jobs": [{**SFT, "technique": "rlhf"}]},
            "jobs[0].technique",
            "'rlhf' is not allowed",
        ),
        (
            {"jobs": [{**SFT, "hyperparameters": {"max_length": 200000}}]},
            "jobs[0].hyperparameters.max_length",
            "Nova Lite sft-lora on ml.p5.48xlarge takes sequences up to 32768 tokens, not 200000",
        ),
        (
            {
                "jobs": [SFT],
                "training_plans": [{"name": "main", "purchase": {**APPROVED, "currency": "usd"}}],
            },
            "capacity.training_plans[0].purchase.currency",
            "currency codes are upper case; write USD",
        ),
        (
            {
                "jobs": [SFT],
                "training_plans": [
                    {"name": "main", "purchase": {**APPROVED, "max_upfront_fee": "-5"}}
                ],
            },
            "capacity.training_plans[0].purchase.max_upfront_fee",
            "more than 0",
        ),
        (
            {
                "jobs": [SFT],
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
        "dup-job",
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
    "jobs": [SFT],
    "training_plans": [{"name": "main", "purchase": APPROVED}],
}


def with_cluster(
    hyperpod: dict[str, Any] | None, eks: dict[str, Any] | None = None, capacity=PLANNED
) -> dict[str, Any]:
    """VALID with these sections; jobs go to the root, and a job whose plan a restricted
    group serves runs on that group (with a hyperpod section jobs name groups, not plans)."""
    capacity = dict(capacity)
    jobs = capacity.pop("jobs", [])
    if hyperpod is not None:
        rigs = {
            g["training_plan"]: g["name"] for g in hyperpod.get("restricted_instance_groups", [])
        }
        jobs = [
            {**{k: v for k, v in job.items() if k != "plan"}, "instance_group": rigs[job["plan"]]}
            if job.get("plan") in rigs
            else job
            for job in jobs
        ]
    data = {**VALID, "jobs": jobs, "capacity": capacity, "eks": {} if eks is None else eks}
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
            {
                k: v
                for k, v in with_cluster({"restricted_instance_groups": [RIG]}).items()
                if k != "eks"
            },
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
                {"restricted_instance_groups": [{**RIG, "instance_type": "ml.p4d.24xlarge"}]},
                capacity={
                    "jobs": [SFT],
                    "training_plans": [
                        {"name": "main", "instance_type": "ml.p5.48xlarge", "purchase": APPROVED}
                    ],
                },
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
            with_cluster(None, eks={"kubernetes_version": "1.27"}),
            "eks.kubernetes_version",
            "1.27 is not a Kubernetes version SageMaker HyperPod lists for EKS clusters",
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


@pytest.mark.parametrize(
    ("cidrs", "message"),
    [
        (["0.0.0.0/0"], "0.0.0.0/0 admits every address to the private endpoint; list your CIDRs"),
        (
            ["10.100.0.1/16"],
            "'10.100.0.1/16' is not an IPv4 CIDR (10.100.0.1/16 has host bits set)",
        ),
        (["10.100.0.0/16", "10.100.0.0/16"], "10.100.0.0/16 is listed twice; remove one"),
        (["vpn"], "'vpn' is not an IPv4 CIDR (Expected 4 octets in 'vpn')"),
    ],
)
def test_private_access_cidrs_are_distinct_ipv4_networks(cidrs: list[str], message: str) -> None:
    issues = dict(errors_of(with_cluster(None, eks={"private_access_cidrs": cidrs})))
    assert issues["eks.private_access_cidrs"] == message


def test_private_access_cidrs_need_no_public_endpoint() -> None:
    data = with_cluster(
        {"restricted_instance_groups": [RIG]}, eks={"private_access_cidrs": ["10.100.0.0/16"]}
    )
    eks = parse_config(data).eks
    assert eks is not None
    assert (eks.endpoint, eks.private_access_cidrs) == ("private", ["10.100.0.0/16"])


def test_rig_outside_known_regions_warns() -> None:
    # No jobs: sa-east-1 has no Nova images, so a job there is refused, not warned about.
    plan = {"name": "main", "instance_type": "ml.p5.48xlarge", "instance_count": 4}
    capacity = {"training_plans": [{**plan, "duration_hours": 48, "purchase": APPROVED}]}
    data = with_cluster({"restricted_instance_groups": [RIG]}, capacity=capacity)
    assert parse_config(data).warnings() == []
    data = {
        **data,
        "region": "sa-east-1",
        "network": {"vpc": {"zone_ids": ["sae1-az1", "sae1-az2"]}},
    }
    (warning,) = parse_config(data).warnings()
    assert warning.startswith(
        "region: restricted instance groups have been seen only in us-east-1, us-west-2, "
        "eu-west-2, eu-north-1, ap-northeast-1; check that sa-east-1 offers them"
    )


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


# ------------------------------------------------------------- fix-it error wording

BASE_YAML = "name: dev\nregion: us-east-1\nnetwork:\n  vpc:\n    zone_ids: [use1-az4, use1-az6]\n"


def load_issues(tmp_path, text: str) -> dict[str, str]:
    """Write a config, load it, and return its issues (path -> message)."""
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.source == str(path)
    return dict(info.value.issues)


ZONE_NAME_HINT = (
    "us-east-1a is a zone name; use the zone ID, e.g. use1-az4 "
    "(aws ec2 describe-availability-zones --region us-east-1 shows both)"
)


@pytest.mark.parametrize(
    ("data", "path"),
    [
        (with_("network.vpc.zone_ids", ["use1-az4", "us-east-1a"]), "network.vpc.zone_ids[1]"),
        (with_("storage.lustre", {"zone_id": "us-east-1a"}), "storage.lustre.zone_id"),
        (
            {
                **VALID,
                "network": {
                    "existing_vpc": {
                        **EXISTING,
                        "private_subnets": [
                            {**EXISTING["private_subnets"][0], "zone_id": "us-east-1a"},
                            EXISTING["private_subnets"][1],
                        ],
                    }
                },
            },
            "network.existing_vpc.private_subnets[0].zone_id",
        ),
    ],
    ids=["vpc-zone-ids", "lustre-zone-id", "existing-subnet-zone-id"],
)
def test_a_zone_name_is_answered_with_how_to_find_the_zone_id(data, path) -> None:
    assert dict(errors_of(data))[path] == ZONE_NAME_HINT


def test_a_zone_name_of_another_region_names_that_regions_ids() -> None:
    issues = dict(errors_of(with_("network.vpc.zone_ids", ["eu-west-1b", "use1-az6"])))
    assert issues["network.vpc.zone_ids[0]"] == (
        "eu-west-1b is a zone name; use the zone ID, e.g. euw1-az4 "
        "(aws ec2 describe-availability-zones --region eu-west-1 shows both)"
    )


def test_something_else_in_place_of_a_zone_id() -> None:
    issues = dict(errors_of(with_("network.vpc.zone_ids", ["az4", "use1-az6"])))
    assert (
        issues["network.vpc.zone_ids[0]"] == "'az4' is not an Availability Zone ID such as use1-az4"
    )


def test_money_written_with_a_currency_sign_asks_for_a_plain_number(tmp_path) -> None:
    issues = load_issues(tmp_path, BASE_YAML + "storage:\n  access_log_days: '$40,000'\n")
    assert issues["storage.access_log_days"] == (
        "'$40,000' is not a whole number; write a plain number, e.g. 40000 "
        "(no currency sign or separators)"
    )


def test_a_fee_written_with_a_currency_sign_asks_for_a_plain_number() -> None:
    plan = {
        "name": "main",
        "instance_type": "ml.p5.48xlarge",
        "instance_count": 1,
        "duration_hours": 24,
        "purchase": {"approve": True, "max_upfront_fee": "$40,000"},
    }
    issues = dict(errors_of(with_capacity({"training_plans": [plan]})))
    assert issues["capacity.training_plans[0].purchase.max_upfront_fee"].startswith(
        "'$40,000' is not a plain number; write 40000 (the currency goes in purchase.currency)"
    )


def test_an_unquoted_kubernetes_version_is_read_as_a_float_and_the_fix_is_quoting(
    tmp_path,
) -> None:
    from novapod.facts import eks_facts

    versions = [v for v in eks_facts().supported_versions if v.endswith("0")]
    version = versions[0] if versions else "1.30"
    issues = load_issues(tmp_path, BASE_YAML + f"eks:\n  kubernetes_version: {version}\n")
    assert issues["eks.kubernetes_version"] == (
        f'YAML read this as the number {float(version)}; quote it: kubernetes_version: "{version}"'
    )


def test_an_unquoted_account_with_a_leading_zero_is_octal_and_the_fix_is_quoting(
    tmp_path,
) -> None:
    issues = load_issues(tmp_path, BASE_YAML + "account: 012345670123\n")
    message = issues["account"]
    assert message.endswith('quote it: account: "012345670123"')
    assert "octal" in message
    assert str(int("12345670123", 8)) in message  # what YAML made of it


def test_an_unquoted_account_is_never_accepted_silently(tmp_path) -> None:
    issues = load_issues(tmp_path, BASE_YAML + "account: 123456789012\n")
    assert issues["account"] == (
        'YAML read this as the number 123456789012; quote it: account: "123456789012"'
    )


def test_an_unquoted_tag_value_is_answered_with_its_quoted_form(tmp_path) -> None:
    issues = load_issues(tmp_path, BASE_YAML + "tags:\n  cost-center: 4711\n")
    assert issues["tags.cost-center"] == (
        'YAML read this as the number 4711; quote it: cost-center: "4711"'
    )


def test_a_long_environment_name_says_the_limit_and_the_length() -> None:
    issues = dict(errors_of(with_("name", "a-very-long-environment")))
    assert issues["name"] == "at most 20 characters; got 23"


def test_one_zone_says_why_two_are_needed() -> None:
    issues = dict(errors_of(with_("network.vpc.zone_ids", ["use1-az4"])))
    assert issues["network.vpc.zone_ids"] == (
        "list at least 2 zone IDs, because EKS needs subnets in at least two Availability "
        "Zones; got 1"
    )


def test_an_inverted_window_is_called_inverted() -> None:
    plan = {
        "name": "own",
        "existing_arn": ARN,
        "instance_type": "ml.p5.48xlarge",
        "instance_count": 4,
        "start_after": "2099-03-01T00:00:00Z",
        "end_before": "2099-02-01T00:00:00Z",
    }
    issues = dict(errors_of(with_capacity({"training_plans": [plan]})))
    assert issues["capacity.training_plans[0].end_before"] == (
        "the window is inverted: end_before 2099-02-01T00:00:00+00:00 is not after "
        "start_after 2099-03-01T00:00:00+00:00; swap the two or correct the dates"
    )


def test_a_time_without_a_utc_offset_shows_the_form_to_write(tmp_path) -> None:
    plan = {
        "name": "own",
        "existing_arn": ARN,
        "instance_type": "ml.p5.48xlarge",
        "instance_count": 4,
        "start_after": "2099-03-01T00:00:00",
    }
    issues = dict(errors_of(with_capacity({"training_plans": [plan]})))
    assert issues["capacity.training_plans[0].start_after"].endswith(
        "has no UTC offset; write it like 2027-03-01T00:00:00Z"
    )


def test_a_pattern_mismatch_says_what_is_expected_not_the_regex() -> None:
    issues = dict(errors_of(with_("region", "US-East-1")))
    assert issues["region"] == "'US-East-1' does not match a region code such as us-east-1"


def test_every_cross_field_error_is_reported_at_once(tmp_path) -> None:
    path = tmp_path / "many.yaml"
    path.write_text(
        "name: dev\nregion: us-east-1\ntags: {'aws:owner': me}\n"
        "network:\n  closed: true\n  vpc:\n    cidr: 10.0.0.0/22\n"
        "    zone_ids: [use1-az4, usw2-az1]\n"
        "storage:\n  lustre: {zone_id: use1-az1}\n"
        "eks:\n  admin_principals: [arn:aws:iam::111122223333:role/a, "
        "arn:aws:iam::111122223333:role/a]\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    paths = [p for p, _ in info.value.issues]
    assert paths == [
        "network.vpc.zone_ids[1]",
        "network.vpc.cidr",
        "storage.lustre.zone_id",
        "network.closed",
        "tags",
        "eks.admin_principals",
    ]
    lines = info.value.render().splitlines()
    assert len(lines) == 6
    assert all(line.startswith(f"{path}: ") for line in lines)
    assert lines[0] == (
        f"{path}: network.vpc.zone_ids[1]: usw2-az1 is not a zone of us-east-1 "
        "(its zone IDs start with use1-az)"
    )


def test_errors_of_nested_sections_are_reported_together() -> None:
    data = with_(
        "network",
        {
            "existing_vpc": {
                **EXISTING,
                "private_subnets": [
                    {k: v for k, v in s.items() if k != "route_table_id"}
                    for s in EXISTING["private_subnets"]
                ],
            },
            "endpoints": ["s3", "s3"],
        },
    )
    paths = [p for p, _ in errors_of(data)]
    assert paths == [
        "network.endpoints",
        "network.existing_vpc.private_subnets[0].route_table_id",
        "network.existing_vpc.private_subnets[1].route_table_id",
    ]


def test_load_errors_name_the_file_on_every_line(tmp_path) -> None:
    path = tmp_path / "two.yaml"
    path.write_text("name: Dev\nregion: us-east-1\nnetwork: {vpc: {zone_ids: [use1-az4]}}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.render().splitlines() == [
        f"{path}: name: 'Dev' does not match an environment name: lowercase letters, digits "
        "and single '-', starting with a letter and ending with a letter or digit",
        f"{path}: network.vpc.zone_ids: list at least 2 zone IDs, because EKS needs subnets "
        "in at least two Availability Zones; got 1",
    ]


def test_an_environment_name_with_two_dashes_in_a_row_is_refused(tmp_path) -> None:
    """Training job names join the environment and the job with `--` (no environment's
    names then start as another's: review 23b, finding 1)."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "name: a--b\nregion: us-east-1\nnetwork: {vpc: {zone_ids: [use1-az4, use1-az6]}}\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.render().splitlines() == [
        f"{path}: name: 'a--b' does not match an environment name: lowercase letters, digits "
        "and single '-', starting with a letter and ending with a letter or digit",
    ]


def test_a_forbidden_character_is_one_line_with_its_position(tmp_path) -> None:
    # PyYAML's ReaderError has no mark and a second 'in "<unicode string>"' line.
    path = tmp_path / "c.yaml"
    path.write_text('name: dev\nregion: "\x07"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.render() == (
        f"{path}: invalid YAML at line 2, column 10: unacceptable character #x0007: "
        "special characters are not allowed"
    )


def test_a_missing_file_is_named_once(tmp_path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.render() == f"{path}: cannot read the file: No such file or directory"


# ------------------------------------------------------------------------ encodings

DEFAULT_TEXT = ALL_CONFIGS[0].read_text(encoding="utf-8")


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16", "utf-16-be", "utf-32", "utf-32-be"])
def test_configs_with_a_byte_order_mark_are_read(tmp_path, encoding) -> None:
    path = tmp_path / "bom.yaml"
    text = "# Zürich team\n" + DEFAULT_TEXT
    data = text.encode(encoding)
    if encoding.endswith("-be"):  # Python writes no mark for an explicit byte order
        mark = {"utf-16-be": b"\xfe\xff", "utf-32-be": b"\x00\x00\xfe\xff"}[encoding]
        data = mark + data
    path.write_bytes(data)
    assert load_config(path) == load_config(ALL_CONFIGS[0])


def test_a_latin1_byte_names_offset_line_and_the_fix(tmp_path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(
        ("name: dev\n# caf\u00e9\n" + DEFAULT_TEXT[DEFAULT_TEXT.index("region") :]).encode(
            "latin-1"
        )
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.render() == (
        f"{path}: byte 15 (line 2, 0xe9) is not valid UTF-8; save the file as UTF-8 "
        "(in most editors: Save with Encoding, UTF-8)"
    )


# ---------------------------------------------------------------------- JSON schema


def _object_schemas(node: Any, where: str = "#") -> list[tuple[str, dict[str, Any]]]:
    """Every object schema that declares properties (models, not if/then fragments)."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            found.append((where, node))
        for key, value in node.items():
            found += _object_schemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _object_schemas(value, f"{where}[{i}]")
    return found


def test_json_schema_describes_every_property() -> None:
    objects = _object_schemas(json_schema())
    assert len(objects) >= 15
    missing = [
        f"{where}/{key}"
        for where, node in objects
        for key, prop in node["properties"].items()
        if not prop.get("description")
    ]
    assert missing == []


def _types(node: Any) -> set[str]:
    out: set[str] = set()
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):
            out.add(node["type"])
        for key in ("anyOf", "oneOf"):
            for branch in node.get(key, []):
                out |= _types(branch)
    return out


def test_json_schema_types_numbers_as_numbers() -> None:
    schema = json_schema()
    fee = schema["definitions"]["Purchase"]["properties"]["max_upfront_fee"]
    assert "string" not in _types(fee)
    assert "number" in _types(fee)
    number_or_string = [
        f"{where}/{key}"
        for where, node in _object_schemas(schema)
        for key, prop in node["properties"].items()
        if {"number", "string"} <= _types(prop) or {"integer", "string"} <= _types(prop)
    ]
    assert number_or_string == []


class _TimestampsAsText(yaml.SafeLoader):
    """YAML as an editor's language server sees it: timestamps stay strings."""


_TimestampsAsText.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _schema_errors(data: Any) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft7Validator(json_schema())
    return [error.message for error in validator.iter_errors(data)]


def test_json_schema_is_a_valid_draft7_schema() -> None:
    import jsonschema

    jsonschema.Draft7Validator.check_schema(json_schema())


def test_json_schema_keeps_descriptions_where_draft7_reads_them() -> None:
    """Draft 7 ignores keywords beside $ref; a described reference sits in allOf."""

    def refs_with_siblings(node: Any) -> int:
        if isinstance(node, dict):
            own = 1 if "$ref" in node and len(node) > 1 else 0
            return own + sum(refs_with_siblings(v) for v in node.values())
        if isinstance(node, list):
            return sum(refs_with_siblings(v) for v in node)
        return 0

    schema = json_schema()
    assert refs_with_siblings(schema) == 0
    network = schema["properties"]["network"]
    assert network["allOf"] == [{"$ref": "#/definitions/Network"}]
    assert network["description"]


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=lambda p: p.name)
def test_json_schema_accepts_every_shipped_config(path) -> None:
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_TimestampsAsText)
    assert _schema_errors(data) == []


SCHEMA_REJECTS = [
    ("name-uppercase", with_("name", "Dev")),
    ("name-too-long", with_("name", "a-very-long-environment")),
    ("account-as-number", with_("account", 123456789012)),
    ("one-zone", with_("network.vpc.zone_ids", ["use1-az4"])),
    ("zone-name", with_("network.vpc.zone_ids", ["us-east-1a", "use1-az6"])),
    ("zone-twice", with_("network.vpc.zone_ids", ["use1-az4", "use1-az4"])),
    ("cidr-too-small", with_("network.vpc.cidr", "10.0.0.0/25")),
    ("unknown-key", with_("network.vpc.zones", ["use1-az1"])),
    ("no-vpc-choice", with_("network", {})),
    ("both-vpc-choices", with_("network.existing_vpc", EXISTING)),
    ("endpoint-twice", with_("network.endpoints", ["sts", "sts"])),
    ("flow-log-retention", with_("network.flow_logs.retention_days", 100)),
    ("lustre-size", with_("storage.lustre", {"storage_capacity_gib": 3600})),
    ("lustre-throughput", with_("storage.lustre", {"throughput_per_unit": 200})),
    ("days-as-money", with_("storage.access_log_days", "$40,000")),
    ("tag-key-reserved-chars", with_("tags", {"a&b": "x"})),
    ("tag-value-number", with_("tags", {"cost": 4711})),
    ("kubernetes-version-number", with_("eks", {"kubernetes_version": 1.3})),
    ("kubernetes-version-unknown", with_("eks", {"kubernetes_version": "1.20"})),
    ("public-endpoint-without-cidrs", with_("eks", {"endpoint": "public-and-private"})),
    ("cidrs-with-private-endpoint", with_("eks", {"public_access_cidrs": ["10.0.0.0/8"]})),
    ("hyperpod-without-eks", with_("hyperpod", {"instance_groups": [
        {"name": "cpu", "instance_type": "ml.m5.2xlarge", "instance_count": 1}]})),
    ("hyperpod-without-groups", with_("eks", {}, with_("hyperpod", {}))),
    ("group-instance-type", with_("eks", {}, with_("hyperpod", {"instance_groups": [
        {"name": "cpu", "instance_type": "ml.nope.large", "instance_count": 1}]}))),
    ("rig-fsx-size", with_("eks", {}, with_("hyperpod", {"restricted_instance_groups": [
        {"name": "rig", "training_plan": "main", "fsx_size_gib": 1000}]}))),
]  # fmt: skip


@pytest.mark.parametrize("data", [c[1] for c in SCHEMA_REJECTS], ids=[c[0] for c in SCHEMA_REJECTS])
def test_json_schema_rejects_what_the_validator_rejects(data) -> None:
    assert errors_of(data)  # the validator says no ...
    assert _schema_errors(data)  # ... and so does the editor


def test_a_region_without_known_node_image_registries_is_refused_with_eks() -> None:
    data = {
        **VALID,
        "region": "eu-south-1",
        "network": {"vpc": {"zone_ids": ["eus1-az1", "eus1-az2"]}},
        "eks": {},
    }
    issues = dict(errors_of(data))
    assert issues["region"].startswith(
        "novapod knows the EKS add-on and HyperPod health-agent image registries of "
        "ap-northeast-1, ap-south-1,"
    )
    assert issues["region"].endswith(
        "not of eu-south-1: choose one of them, or add the region to "
        "novapod/data/node_images.yaml and hyperpod_dependencies.yaml"
    )
    # Without eks nothing pulls node images: the network and storage alone are fine.
    assert parse_config({**data, "eks": None}).region == "eu-south-1"


def test_a_kubernetes_version_past_standard_support_warns() -> None:
    old = parse_config({**VALID, "eks": {"kubernetes_version": "1.33"}})
    (warning,) = old.warnings(today=date(2026, 11, 30))
    assert warning.startswith("eks.kubernetes_version: 1.33 left EKS standard support on ")
    # Judged on the day given, not today: 1.33 was in standard support until 2026-07-29.
    assert old.warnings(today=date(2026, 7, 28)) == []
    current = parse_config({**VALID, "eks": {"kubernetes_version": "1.34"}})
    assert current.warnings(today=date(2026, 11, 30)) == []


def test_warnings_are_judged_on_the_day_the_config_was_validated_as_of() -> None:
    # 1.34 left EKS standard support on 2026-12-02: a replay as of the day before (or
    # NOVAPOD_VALIDATE_AS_OF) warns as that day's synth did, not as today's would.
    data = {**VALID, "eks": {"kubernetes_version": "1.34"}}
    assert parse_config(data, now=datetime(2026, 12, 1, tzinfo=UTC)).warnings() == []
    (warning,) = parse_config(data, now=datetime(2026, 12, 2, tzinfo=UTC)).warnings()
    assert warning.startswith("eks.kubernetes_version: 1.34 left EKS standard support on ")


def test_validation_time_can_be_set_for_reproducible_synths(monkeypatch) -> None:
    capacity = {
        "jobs": [SFT],
        "training_plans": [
            {
                "name": "main",
                "end_before": "2027-02-28T00:00:00Z",
                "purchase": {**APPROVED, "approve": "novapod-dev-main-cb891fae"},
            }
        ],
    }
    monkeypatch.setenv("NOVAPOD_VALIDATE_AS_OF", "2027-03-01T00:00:00+00:00")
    assert dict(errors_of(with_capacity(capacity)))["capacity.training_plans[0].end_before"]
    monkeypatch.setenv("NOVAPOD_VALIDATE_AS_OF", "2027-02-01T00:00:00Z")
    assert parse_config(with_capacity(capacity)).name == "dev"
    monkeypatch.setenv("NOVAPOD_VALIDATE_AS_OF", "yesterday")
    assert errors_of(with_capacity(capacity)) == [
        (
            "",
            "NOVAPOD_VALIDATE_AS_OF=yesterday is not an ISO 8601 time with a UTC offset; write "
            "it like 2026-11-30T00:00:00Z or unset it",
        )
    ]


def test_a_plan_adopted_by_two_entries_is_refused(tmp_path) -> None:
    # Two resources on one plan would read its extensions side by side, each before the
    # other claims (issue 18: never buy past the largest approved total).
    from pathlib import Path

    from novapod.config import ConfigError, load_config

    root = Path(__file__).resolve().parents[2]
    text = (root / "config" / "examples" / "adopt-existing-plan.yaml").read_text()
    data = yaml.safe_load(text)
    plans = data["capacity"]["training_plans"]
    plans.append({**plans[0], "name": "again"})
    path = tmp_path / "twice.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert raised.value.issues == [
        (
            "capacity.training_plans[1].existing_arn",
            "arn:aws:sagemaker:us-east-1:111122223333:training-plan/team-p5-january is adopted "
            "by an earlier entry too; adopt a plan once (one entry, with the one extend total "
            "it should reach)",
        )
    ]


def test_an_entry_adopting_a_plan_another_entry_buys_is_refused(tmp_path) -> None:
    from pathlib import Path

    from novapod.config import ConfigError, load_config

    root = Path(__file__).resolve().parents[2]
    data = yaml.safe_load((root / "config" / "examples" / "single-rig-purchase.yaml").read_text())
    bought = "novapod-nova-lite-lite-sft-50d13e0b"  # the first entry's name, pinned
    data["capacity"]["training_plans"].append(
        {
            "name": "again",
            "existing_arn": f"arn:aws:sagemaker:us-east-1:111122223333:training-plan/{bought}",
            "instance_type": "ml.p5.48xlarge",
            "instance_count": 4,
        }
    )
    path = tmp_path / "again.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert raised.value.issues == [
        (
            "capacity.training_plans[1].existing_arn",
            f"names {bought}, the plan capacity.training_plans[0] buys: one entry per plan "
            "(put its extend on that entry and remove this one)",
        )
    ]
