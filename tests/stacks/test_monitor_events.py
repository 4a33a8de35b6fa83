"""The monitor's EventBridge rules (novapod/constructs/monitor/alerts.py) applied to the
events SageMaker HyperPod sends, as AWS's own samples show them
(tests/fixtures/hyperpod_events.json, each with its page): each rule matches its event
of this environment's cluster and not an InService change, an Info event or another
cluster's event, and its input transformer makes the sentence the topic sends, also
from a value with a quote in it.

`matches` is EventBridge's exact matching as the user guide states it
(docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html and
eb-create-pattern-operators.html): every field of the pattern must be in the event; a
list of values matches when the event's value, or one element of an array value, is
one of them; an object matches the event's object field by field. The rules use no
other operator (prefix, anything-but, numeric...): `matches` refuses one, so a rule
that starts using one fails here until the evaluator knows it.

`transform` is the input transformer with a plain-text template
(API_InputTransformer.html): each `<name>` is replaced by the value at its path, a
string as it is (EventBridge does not escape it), anything else as JSON, and a path the
event lacks by nothing ("Common issues with transforming input",
eb-transform-target-input.html).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from tests.conftest import ROOT, resources

LITE = ROOT / "config" / "examples" / "single-rig-purchase.yaml"
CLUSTER = "novapod-nova-lite"
FIXTURES = json.loads((ROOT / "tests" / "fixtures" / "hyperpod_events.json").read_text())
SAMPLES: dict[str, dict[str, Any]] = FIXTURES["events"]
ENV = "novapod nova-lite"
QUOTED = 'Capacity "ml.p5.48xlarge" unavailable in use1-az4; see C:\\logs'

_ABSENT = object()


def matches(pattern: Any, event: Any) -> bool:
    """EventBridge's exact matching of `event` by `pattern` (see the module docstring)."""
    if not isinstance(pattern, dict):
        raise AssertionError(f"a pattern level must be an object: {pattern!r}")
    for key, wanted in pattern.items():
        found = event.get(key, _ABSENT) if isinstance(event, dict) else _ABSENT
        if found is _ABSENT:
            return False
        if isinstance(wanted, dict):
            if not isinstance(found, dict) or not matches(wanted, found):
                return False
            continue
        assert isinstance(wanted, list), (key, wanted)
        for value in wanted:
            if isinstance(value, dict):
                raise AssertionError(f"operator {value!r} is not modelled here")
        values = found if isinstance(found, list) else [found]
        if not any(v in wanted for v in values):
            return False
    return True


def resolve(path: str, event: Any) -> Any:
    """The value at a JSON path of the `$.a.b` form, or _ABSENT."""
    assert re.fullmatch(r"\$(\.[A-Za-z0-9_-]+)+", path), path
    value = event
    for part in path.split(".")[1:]:
        if not isinstance(value, dict) or part not in value:
            return _ABSENT
        value = value[part]
    return value


def transform(transformer: dict[str, Any], event: dict[str, Any]) -> str:
    template = transformer["InputTemplate"]
    for name, path in transformer["InputPathsMap"].items():
        value = resolve(path, event)
        text = (
            ""
            if value is _ABSENT
            else value
            if isinstance(value, str)
            else json.dumps(value, separators=(",", ":"))
        )
        template = template.replace(f"<{name}>", text)
    return str(template)


def ours(sample: str, **detail: Any) -> dict[str, Any]:
    """A sample event of this environment's cluster, with `detail` changes; for the
    cluster event they go into detail.EventDetails."""
    event = copy.deepcopy(SAMPLES[sample])
    inner = event["detail"].get("EventDetails", event["detail"])
    inner["ClusterName"] = CLUSTER
    inner.update(detail)
    return event


@pytest.fixture(scope="module")
def rules(synth) -> dict[str, dict[str, Any]]:
    template = synth(LITE).templates["monitor"]
    return {
        r["Properties"]["Name"].removeprefix(f"{CLUSTER}-"): r["Properties"]
        for r in resources(template, "AWS::Events::Rule").values()
    }


def the_rules_matching(rules: dict[str, dict[str, Any]], event: dict[str, Any]) -> list[str]:
    return sorted(name for name, rule in rules.items() if matches(rule["EventPattern"], event))


def test_the_samples_are_aws_s_own_with_their_pages() -> None:
    assert set(FIXTURES["sources"]) == set(SAMPLES)
    for name, url in FIXTURES["sources"].items():
        assert url.startswith("https://docs.aws.amazon.com/sagemaker/latest/dg/"), name
    # The samples' account is the example config's.
    assert {e["account"] for e in SAMPLES.values()} == {"111122223333"}


def test_the_evaluator_matches_as_eventbridge_does() -> None:
    event = {"a": "x", "b": ["y", "z"], "c": {"d": 1}}
    assert matches({"a": ["x", "q"]}, event)
    assert matches({"b": ["z"]}, event)  # one element of an array value
    assert matches({"c": {"d": [1]}}, event)
    assert not matches({"a": ["q"]}, event)
    assert not matches({"e": ["x"]}, event)  # a field the event lacks
    assert not matches({"c": {"d": ["1"]}}, event)  # the string is not the number
    with pytest.raises(AssertionError, match="not modelled"):
        matches({"a": [{"prefix": "x"}]}, event)


@pytest.mark.parametrize(
    ("rule", "event"),
    [
        ("node-health", ours("node-health")),
        ("cluster-state", ours("cluster-state", ClusterStatus="Failed")),
        ("cluster-state", ours("cluster-state", ClusterStatus="RollingBack")),
        ("cluster-state", ours("cluster-state", ClusterStatus="Deleting")),
        ("cluster-event", ours("cluster-event-error")),
    ],
    ids=["node-unhealthy", "state-failed", "state-rolling-back", "state-deleting", "event-error"],
)
def test_each_rule_matches_its_event_of_this_cluster_only(rules, rule, event) -> None:
    assert the_rules_matching(rules, event) == [rule]
    for path in rules[rule]["Targets"][0]["InputTransformer"]["InputPathsMap"].values():
        assert resolve(path, event) is not _ABSENT, path  # every path is in AWS's sample


@pytest.mark.parametrize(
    "event",
    [
        SAMPLES["node-health"],  # another cluster (sample-cluster)
        SAMPLES["cluster-event-error"],
        {**SAMPLES["cluster-state"], "detail": {**SAMPLES["cluster-state"]["detail"],
                                                "ClusterStatus": "Failed"}},
        ours("cluster-state"),  # InService, as the sample is
        ours("cluster-state", ClusterStatus="Creating"),
        ours("cluster-event-error", EventLevel="Info"),
        ours("cluster-event-error", EventLevel="Warn"),
        ours("cluster-event-lifecycle"),  # no EventLevel at all
        ours("node-health", HealthSummary={"HealthStatus": "Healthy"}),
        {**ours("node-health"), "account": "444455556666"},
        {**ours("node-health"), "source": "aws.ec2"},
    ],
    ids=[
        "other-cluster-node",
        "other-cluster-event",
        "other-cluster-failed",
        "in-service",
        "creating",
        "event-info",
        "event-warn",
        "event-without-level",
        "node-healthy",
        "other-account",
        "other-source",
    ],
)  # fmt: skip
def test_no_rule_matches_what_is_not_this_cluster_s_fault(rules, event) -> None:
    assert the_rules_matching(rules, event) == []


def test_the_sentences_from_aws_s_samples(rules) -> None:
    sentences = {
        "node-health": transform(
            rules["node-health"]["Targets"][0]["InputTransformer"], ours("node-health")
        ),
        "cluster-event": transform(
            rules["cluster-event"]["Targets"][0]["InputTransformer"], ours("cluster-event-error")
        ),
    }
    assert sentences == {
        "node-health": f"{ENV}: node i-12345678abcdefghi of HyperPod cluster {CLUSTER} is "
        "Unhealthy: HyperPod Health Monitoring Agent (HMA) has detected fault type "
        "NvidiaErrorTerminate on this node and is unhealthy. (repair action None; Please "
        "Replace the Faulty Node.); next: aws sagemaker describe-cluster-node --cluster-name "
        f"{CLUSTER} --node-id i-12345678abcdefghi",
        "cluster-event": f"{ENV}: HyperPod cluster {CLUSTER} reports an error (Instance): "
        f"Instance creation in Cluster sample-cluster and InstanceGroup p5Inst failed; next: "
        f"aws sagemaker list-cluster-events --cluster-name {CLUSTER}",
    }


def test_a_value_with_quotes_and_backslashes_is_sent_as_it_is(rules) -> None:
    """EventBridge does not escape values: in a plain-text template they stay text (a
    JSON-string template would break on the quote)."""
    transformer = rules["cluster-state"]["Targets"][0]["InputTransformer"]
    event = ours("cluster-state", ClusterStatus="Failed", FailureMessage=QUOTED)
    assert transform(transformer, event) == (
        f"{ENV}: HyperPod cluster {CLUSTER} is Failed ({QUOTED}); next: aws sagemaker "
        f"describe-cluster --cluster-name {CLUSTER}"
    )


@pytest.mark.parametrize("rule", ["node-health", "cluster-state", "cluster-event"])
def test_each_template_is_plain_text_with_a_path_for_each_placeholder(rules, rule) -> None:
    transformer = rules[rule]["Targets"][0]["InputTransformer"]
    template = transformer["InputTemplate"]
    assert template.startswith(ENV)  # not a JSON string ("...") nor an object ({...})
    assert set(re.findall(r"<([^<>]+)>", template)) == set(transformer["InputPathsMap"])


def test_a_path_the_event_lacks_is_left_out_not_sent_as_a_placeholder(rules) -> None:
    transformer = rules["node-health"]["Targets"][0]["InputTransformer"]
    event = ours("node-health")
    del event["detail"]["HealthSummary"]["Recommendation"]
    sentence = transform(transformer, event)
    assert "<advice>" not in sentence and "(repair action None; )" in sentence
