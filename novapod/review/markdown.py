"""The review's JSON rendered as Markdown for a pull-request comment.

Rendered only from the JSON document (report.build), in the issue's order: purchases,
stateful resources (then the HyperPod instance groups), security, then everything else
per stack, collapsed. It stays under
GitHub's comment limit (65,536 characters): items are added in that order until the
budget is spent, and the comment says how many of what it left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from novapod.capacity.chart import TARGET_WORDS
from novapod.review import mermaid
from novapod.review.iam import condition_changes
from novapod.review.report import GATES
from novapod.review.semantics import CAP_TITLE
from novapod.review.values import amount

COMMENT_LIMIT = 65_536
# Room kept for what is always written last: the left-out note, closing tags, the footer.
_RESERVE = 2_000
_MAX_LIST = 8  # values shown per list (actions, resources); the JSON has them all
_MAX_LINE = 1_500

_PURCHASE_VERB = {
    "buy": "Buys",
    "adopt": "Adopts",
    "extend": "Extends",
    "update": "Updates",
    "remove": "Removes",
    "import": "Imports",
}
# The engine's per-property impact, in words; NO_CHANGE is what it says of a property it
# has no spec for (a custom resource's): the value changed, CloudFormation sends Update.
_IMPACT = {
    "WILL_UPDATE": "update",
    "WILL_REPLACE": "replaces",
    "MAY_REPLACE": "may replace",
    "NO_CHANGE": "changed",
}
_CATEGORY_TITLE = {
    "will-replace": "Will be replaced",
    "may-replace": "May be replaced",
    "destroy": "Destroyed",
    "orphan": "Orphaned (retained: leaves the stack, keeps its data)",
}


def code(text: object) -> str:
    return "`" + str(text).replace("`", "'").replace("\n", " ") + "`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _html(text: object) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _listing(values: Sequence[str]) -> str:
    shown = ", ".join(code(v) for v in values[:_MAX_LIST])
    more = len(values) - _MAX_LIST
    return shown + (f" and {more} more" if more > 0 else "")


def _clip(line: str) -> str:
    return line if len(line) <= _MAX_LINE else line[: _MAX_LINE - 1] + "…"


class _Page:
    """Lines within a character budget; items past it are counted, not written."""

    def __init__(self, limit: int) -> None:
        self.lines: list[str] = []
        self.size = 0
        self.budget = limit - _RESERVE
        self.full = False
        self.left_out: Counter[str] = Counter()

    def line(self, text: str = "") -> None:
        self.lines.append(text)
        self.size += len(text) + 1

    def item(self, text: str, what: str) -> bool:
        text = _clip(text)
        if self.full or self.size + len(text) + 1 > self.budget:
            self.full = True
            self.left_out[what] += 1
            return False
        self.line(text)
        return True

    def block(self, lines: Sequence[str], what: str, limit: int) -> bool:
        """`lines` whole (a diagram cut in half is no diagram) while the page stays
        under `limit`, else counted as left out."""
        size = sum(len(line) + 1 for line in lines)
        if self.full or self.size + size > min(limit, self.budget):
            self.left_out[what] += 1
            return False
        for line in lines:
            self.line(line)
        return True

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def render(report: Mapping[str, Any], limit: int = COMMENT_LIMIT) -> str:
    """The comment: at most `limit` characters, the same bytes for the same report."""
    page = _Page(limit)
    page.line("## novapod review")
    page.line()
    summary = report["summary"]
    if not summary["changed"]:
        count = len(summary["stacks"]["unchanged"])
        page.line(f"No changes: all {count} stacks synthesize the same templates.")
        if report.get("schedules") or report.get("job_moves"):
            page.line()
            _schedules(page, report.get("schedules", ()))
            _job_moves(page, report.get("job_moves", ()))
        _footer(page, report)
        return page.text()
    _overview(page, report)
    _purchases(page, report["purchases"])
    _schedules(page, report.get("schedules", ()))
    _job_moves(page, report.get("job_moves", ()))
    _stateful(page, report["stateful"])
    _instance_groups(page, report.get("instance_groups", ()))
    _security(page, report["security"])
    shown = {(e["stack"], e["logical_id"]) for e in report["purchases"]}
    shown |= {(e["stack"], e["logical_id"]) for e in report["stateful"]}
    shown |= {(e["stack"], e["logical_id"]) for e in report["security"]["endpoints"]}
    _other(page, report["stacks"], shown)
    _footer(page, report)
    return page.text()


def _overview(page: _Page, report: Mapping[str, Any]) -> None:
    stacks = report["summary"]["stacks"]
    parts = [
        f"{len(stacks[s])} {s} ({', '.join(code(n) for n in stacks[s])})"
        for s in ("added", "changed", "removed")
        if stacks[s]
    ]
    parts.append(f"{len(stacks['unchanged'])} unchanged")
    page.line("Stacks: " + "; ".join(parts) + ".")
    if stacks["removed"]:
        page.line()
        page.line(
            "A removed stack stays deployed: `cdk deploy` never deletes a stack that left the "
            "app, so what is listed for it happens when it is deleted (`cdk destroy`)."
        )
    gates = [g for g in GATES if report["gates"].get(g)]  # GATES' order, whatever the JSON's
    if gates:
        page.line()
        page.line(
            "Trips "
            + ", ".join(f"{code(g)} ({GATES[g]})" for g in gates)
            + ": `novapod review --fail-on` with these gates exits 3."
        )
    page.line()


def _purchases(page: _Page, purchases: Sequence[Mapping[str, Any]]) -> None:
    page.line("### 1. Purchases")
    page.line()
    if not purchases:
        page.line("No training plan is bought, changed or removed; no Bedrock import changes.")
    for entry in purchases:
        page.item(_purchase_line(entry), "purchases")
        for change in entry.get("cap_changes", ()):
            page.item(_cap_line(entry, change), "purchases")
        for warning in entry.get("cap_warnings", ()):
            page.item(_cap_warning_line(entry, warning), "purchases")
    page.line()


def _purchase_line(entry: Mapping[str, Any]) -> str:
    verb = _PURCHASE_VERB.get(str(entry["action"]), str(entry["action"]))
    where = f"({code(entry['stack'])} {code(entry['logical_id'])})"
    if entry["kind"] == "bedrock-model":
        deployment = entry["deployment"]
        return (
            f"- **{verb}** Bedrock model {code(entry['model_name'])} {where} from "
            f"{code(entry['output_prefix'])}, deployment {deployment}"
            + (f"; changed {', '.join(entry['changed'])}" if entry["changed"] else "")
            + f": {entry['note']}."
        )
    size = f"{entry['instance_count']} x {entry['instance_type']}"
    served = [TARGET_WORDS.get(t, t) for t in entry.get("target_resources", ())]
    if served:  # a report from before target_resources: no words for them
        size += f" for {' and '.join(served)}"
    details = [size]
    if entry["duration_hours"] is not None:
        details.append(f"for {entry['duration_hours']} h")
    if entry["start_after"] or entry["end_before"]:
        details.append(
            f"between {entry['start_after'] or 'now'} and {entry['end_before'] or 'any time'}"
        )
    if entry["max_upfront_fee"] is not None:
        details.append(f"fee cap {entry['max_upfront_fee']} {entry['currency']}")
    if entry["existing_arn"]:
        details.append(f"existing {code(entry['existing_arn'])}")
    changed = f"; changed {', '.join(entry['changed'])}" if entry["changed"] else ""
    return (
        f"- **{verb}** training plan {code(entry['plan_name'])} {where}: "
        f"{', '.join(details)}{changed}. {entry['note'][0].upper()}{entry['note'][1:]}."
    )


def _schedules(page: _Page, schedules: Sequence[Mapping[str, Any]]) -> None:
    """Each plan whose schedule is new or moved, as Mermaid gantt charts (mermaid.py);
    they fill at most half the comment, so the sections after them keep their room."""
    if not schedules:
        return
    page.line("**Schedules** (day 1 is a plan's first day; the offering bought sets its date)")
    page.line()
    for entry in schedules:
        lines = mermaid.schedule_lines(entry, code)
        if lines:
            page.block([*lines, ""], "schedules", limit=page.budget // 2)


def _job_moves(page: _Page, moves: Sequence[Mapping[str, Any]]) -> None:
    """Each job whose placement moves, one line each, after the schedules that show
    what each plan holds now."""
    if not moves:
        return
    page.line(
        "**Job moves** (where each job runs, as each side's planner placed it; the "
        "schedules above show what each plan holds)"
    )
    page.line()
    for entry in moves:
        page.item(_move_line(entry), "job moves")
    page.line()


def _placement(where: Mapping[str, Any]) -> str:
    """restricted group `g` on plan `a` | a training job on plan `b` | ... on demand."""
    plan = f"plan {code(where['plan'])}" if where["plan"] is not None else None
    if where["platform"] == "hyperpod":
        group = where["instance_group"]
        on = f"restricted group {code(group)}" if group else "HyperPod"
        return f"{on} on {plan}" if plan else on
    if where["platform"] == "training-job":
        return f"a training job on {plan}" if plan else "a training job on demand"
    return f"{plan} (platform not recorded at the base)" if plan else "on demand"


def _move_line(entry: Mapping[str, Any]) -> str:
    """ "- `micro-sft` moves from restricted group `g` on plan `a` (4 x ...) to a training
    job on plan `b` (2 x ...)"; a change of size alone is "is resized"."""
    before, after = entry["before"], entry["after"]

    def size(where: Mapping[str, Any]) -> str:
        return f"{where['instance_count']} x {where['instance_type']}"

    job = f"{code(entry['job'])} ({code(entry['environment'])})"
    if set(entry["changed"]) <= {"instance_type", "instance_count"}:
        return f"- {job} is resized on {_placement(after)}: {size(before)} → {size(after)}."
    return (
        f"- {job} moves from {_placement(before)} ({size(before)}) to "
        f"{_placement(after)} ({size(after)})."
    )


def _cap_line(entry: Mapping[str, Any], change: Mapping[str, Any]) -> str:
    """One cap change: "Cap raised 6,000 → 600,000 USD on training plan `novapod-…`"."""
    title = CAP_TITLE.get(str(change["change"]), str(change["change"]))
    before, after = (
        "no cap" if fee is None else amount(fee)
        for fee in (change["previous_max_upfront_fee"], change["max_upfront_fee"])
    )
    if change["previous_currency"] in (None, change["currency"]):
        what = f"{before} → {after} {change['currency']}"
    else:
        what = (
            f"{change['previous_currency']} → {change['currency']} "
            f"(cap {before} {change['previous_currency']} → {after} {change['currency']})"
        )
    thing = "training plan" if change["of"] == "plan" else "extension"
    where = f"({code(entry['stack'])} {code(entry['logical_id'])})"
    note = str(change["note"])
    return (
        f"- **{title}** {what} on {thing} {code(change['name'])} {where}: "
        f"{note[0].upper()}{note[1:]}."
    )


def _cap_warning_line(entry: Mapping[str, Any], warning: Mapping[str, Any]) -> str:
    """A grown plan under an unchanged cap: "Cap unchanged 60,000 USD on ... 4 x 144 h →
    8 x 144 h"."""
    where = f"({code(entry['stack'])} {code(entry['logical_id'])})"
    sizes = [
        f"{warning[f'{p}instance_count']} x {warning[f'{p}duration_hours']} h"
        for p in ("previous_", "")
    ]
    note = str(warning["note"])
    return (
        f"- **Cap unchanged** {amount(warning['max_upfront_fee'])} {warning['currency']} on "
        f"training plan {code(warning['name'])} {where}, grown from {sizes[0]} to {sizes[1]}: "
        f"{note[0].upper()}{note[1:]}."
    )


def _stateful(page: _Page, entries: Sequence[Mapping[str, Any]]) -> None:
    page.line("### 2. Stateful resources")
    page.line()
    if not entries:
        page.line("No bucket, key, file system or cluster is replaced or removed.")
        page.line()
        return
    for category, title in _CATEGORY_TITLE.items():
        chosen = [e for e in entries if e["category"] == category]
        if not chosen:
            continue
        page.line(f"**{title}**")
        page.line()
        for entry in chosen:
            page.item(_stateful_line(entry), "stateful resources")
        page.line()


def _stateful_line(entry: Mapping[str, Any]) -> str:
    cause = ", ".join(entry["cause"])
    if entry["category"] in ("will-replace", "may-replace"):
        cause = f"{cause} {'changes' if len(entry['cause']) == 1 else 'change'}"
    text = f"- {entry['what']} {code(entry['logical_id'])} ({code(entry['stack'])}): {cause}."
    if entry["deletes"]:
        deletes = entry["deletes"]
        joined = ", ".join(deletes[:-1]) + " and " + deletes[-1] if len(deletes) > 1 else deletes[0]
        text += f" Deletes {joined}."
    if entry["note"]:
        text += f" {entry['note'][0].upper()}{entry['note'][1:]}."
    return text


_GROUP_VERB = {"add": "Adds", "remove": "Removes", "update": "Changes"}


def _instance_groups(page: _Page, entries: Sequence[Mapping[str, Any]]) -> None:
    """Under the stateful resources: each instance group an in-place update changes."""
    if not entries:
        return
    page.line("**HyperPod instance groups** (the cluster is updated in place)")
    page.line()
    for entry in entries:
        page.item(_group_line(entry), "instance-group changes")
    page.line()


def _group_line(entry: Mapping[str, Any]) -> str:
    """ "- **Changes** restricted group `g` (...): 4 → 2 x ml.p5.48xlarge, plan `p`: ..."."""
    change = str(entry["change"])

    def pair(key: str, show: Callable[[Any], str]) -> str:
        old, new = entry[f"previous_{key}"], entry[key]
        if change == "remove":
            return show(old)
        if change == "add" or old == new:
            return show(new)
        return f"{show(old)} → {show(new)}"

    size = f"{pair('instance_count', str)} x {pair('instance_type', str)}"
    plan = pair("training_plan", lambda name: code(name) if name else "none")
    where = f"({code(entry['stack'])} {code(entry['logical_id'])})"
    effect = str(entry["effect"])
    return (
        f"- **{_GROUP_VERB.get(change, change)}** {entry['kind']} group {code(entry['group'])} "
        f"{where}: {size}, plan {plan}. {effect[0].upper()}{effect[1:]}."
    )


def _security(page: _Page, security: Mapping[str, Any]) -> None:
    page.line("### 3. Security")
    page.line()
    if not any(security.values()):
        page.line("No IAM broadening, security-group opening or endpoint change.")
        page.line()
        return
    if security["iam"]:
        page.line("**IAM broadening**")
        page.line()
        for entry in security["iam"]:
            page.item(_iam_line(entry), "IAM broadenings")
        page.line()
    if security.get("iam_new_principals"):
        page.line("**IAM of new roles and stacks**")
        page.line()
        page.line(
            "A stack or role the base does not have: all it is granted is new, so each role "
            "(or other principal) is one summary; `--format json` lists every action and "
            "resource."
        )
        page.line()
        for entry in security["iam_new_principals"]:
            page.item(_new_principal_line(entry), "new IAM principals")
        page.line()
    if security["security_groups"]:
        page.line("**Security-group openings**")
        page.line()
        for rule in security["security_groups"]:
            page.item(
                f"- {code(rule['stack'])}: {rule['direction']} on {code(rule['group'])}, "
                f"{rule['protocol']} ports {rule['ports']}, "
                f"{'from' if rule['direction'] == 'ingress' else 'to'} {rule['peer']}",
                "security-group openings",
            )
        page.line()
    if security["endpoints"]:
        page.line("**Endpoints**")
        page.line()
        for endpoint in security["endpoints"]:
            touched = f": {', '.join(endpoint['properties'])}" if endpoint["properties"] else ""
            page.item(
                f"- {code(endpoint['stack'])} {code(endpoint['logical_id'])} "
                f"({endpoint['kind']}, {endpoint['change']}) {code(endpoint['service'])}{touched}",
                "endpoint changes",
            )
        page.line()


def _iam_line(entry: Mapping[str, Any]) -> str:
    stack = code(entry["stack"])
    if entry["kind"] == "managed-policy-attached":
        return (
            f"- {stack}: managed policy {code(entry['policy'])} attached to "
            f"{_listing(entry['principals'])}"
        )
    sid = f" {code(entry['sid'])}" if entry.get("sid") else ""
    negated = f" (Not{'/Not'.join(k.capitalize() for k in entry['not'])})" if entry["not"] else ""
    who = _listing(entry["principals"]) or "(resource policy)"
    if entry["kind"] == "deny-removed":
        return (
            f"- {stack}: Deny statement{sid} removed for {who}: actions "
            f"{_listing(entry['actions'])} on {_listing(entry['resources'])}"
            + (" with a condition" if entry["condition"] else "")
        )
    if entry["kind"] == "statement-added":
        return (
            f"- {stack}: new statement{sid}{negated} for {who}: actions "
            f"{_listing(entry['actions'])} on {_listing(entry['resources'])}"
            + (" with a condition" if entry["condition"] else "")
        )
    grants = [
        f"{label} {_listing(entry[key])}"
        for key, label in (
            ("added_actions", "actions"),
            ("added_resources", "resources"),
            ("added_principals", "principals"),
        )
        if entry[key]
    ]
    text = f"- {stack}: statement{sid}{negated} for {who} widened"
    if grants:
        text += f": adds {'; '.join(grants)}"
    if entry["condition_widened"]:
        text += f"{';' if grants else ':'} its condition allows more"
        if "previous_condition" in entry:  # a report from before the field: only that
            changes = condition_changes(entry["previous_condition"], entry["condition"])
            text += f" ({'; '.join(code(change) for change in changes)})"
    return text


def _count(number: int, what: str) -> str:
    return f"{number} {what}{'' if number == 1 else 's'}"


def _new_principal_line(entry: Mapping[str, Any]) -> str:
    """One new role or principal: "- `stack` role `Id`, assumed by `Service:…`: 3 statements
    grant 5 actions in kms, s3 on 2 resources; on any resource (`*`): …"."""
    stack = code(entry["stack"])
    if entry["kind"] == "role":
        who = f"role {code(entry['logical_id'])}"
        if entry["role_name"]:
            who += f" (named {code(entry['role_name'])})"
    else:
        who = f"principal {code(entry['principal'])}"
    if entry["assumed_by"]:
        who += f", assumed by {_listing(entry['assumed_by'])}"
    parts = []
    if entry["statements"]:
        resources = _count(len(entry["resources"]), "resource")
        wildcards = len(entry["wildcard_resources"])
        if wildcards:
            resources += f" ({wildcards} with {'a wildcard' if wildcards == 1 else 'wildcards'})"
        parts.append(
            f"{_count(entry['statements'], 'statement')} "
            f"grant{'s' if entry['statements'] == 1 else ''} "
            f"{_count(len(entry['actions']), 'action')} in {', '.join(entry['services'])} "
            f"on {resources}"
        )
    if entry["on_any_resource"]:
        parts.append(f"on any resource (`*`): {_listing(entry['on_any_resource'])}")
    if entry.get("all_actions_except"):
        parts.append(
            f"every action (`*`) except {_listing(entry['all_actions_except'])} (NotAction)"
        )
    negated = [k for k in entry["negated"] if k != "actions" or "all_actions_except" not in entry]
    if negated:
        words = "/".join("Not" + key.capitalize().rstrip("s") for key in negated)
        parts.append(f"{words} in some statements (all but what they list)")
    if entry["conditional_statements"]:
        parts.append(f"{_count(entry['conditional_statements'], 'statement')} with a condition")
    if entry["managed_policies"]:
        parts.append(f"managed policies {_listing(entry['managed_policies'])}")
    return f"- {stack} {who}: " + ("; ".join(parts) or "no permissions of its own") + "."


def _other(page: _Page, stacks: Iterable[Mapping[str, Any]], shown: set[tuple[str, str]]) -> None:
    page.line("### 4. Other changes, per stack")
    page.line()
    assets: list[str] = []
    wrote = False
    for stack in stacks:
        if stack["status"] == "unchanged":
            continue
        name = stack["stack"]
        assets += [
            f"{code(name)} {code(r['logical_id'])}" for r in stack["resources"] if r["asset_only"]
        ]
        rows = [
            r
            for r in stack["resources"]
            if not r["asset_only"] and (name, r["logical_id"]) not in shown
        ]
        extras = [
            f"{label}: {', '.join(code(v) for v in stack[key])}"
            for key, label in (
                ("outputs", "outputs"),
                ("parameters", "parameters"),
                ("other", "template"),
            )
            if stack[key]
        ]
        if not rows and not extras:
            continue
        wrote = True
        if page.full:
            page.left_out["resource changes"] += len(rows)
            continue
        counts = Counter(str(r["change"]) for r in rows)
        tally = ", ".join(f"{n} {c}" for c, n in sorted(counts.items())) or "outputs only"
        page.line(
            f"<details><summary><code>{_html(name)}</code> ({stack['status']}): {tally}</summary>"
        )
        page.line()
        if rows:
            page.line("| resource | type | change | properties (engine's impact) |")
            page.line("|---|---|---|---|")
            for r in rows:
                properties = ", ".join(
                    f"{p} ({_IMPACT.get(impact, impact)})" for p, impact in r["properties"].items()
                )
                if r["other"]:
                    properties = ", ".join(filter(None, [properties, *r["other"]]))
                cells = (code(r["logical_id"]), str(r["type"]), str(r["change"]), properties)
                page.item("| " + " | ".join(_cell(c) for c in cells) + " |", "resource changes")
        for extra in extras:
            page.line()
            page.line(extra)
        page.line()
        page.line("</details>")
        page.line()
    if assets:
        page.item(
            f"Only asset hashes move (rebuilt code or files) for {len(assets)} resources: "
            + ", ".join(assets[:20])
            + (f" and {len(assets) - 20} more" if len(assets) > 20 else "")
            + ".",
            "asset-only lines",
        )
        page.line()
    elif not wrote:
        page.line("Nothing else.")
        page.line()


def _footer(page: _Page, report: Mapping[str, Any]) -> None:
    if page.left_out:
        left = ", ".join(f"{n} {what}" for what, n in sorted(page.left_out.items()))
        page.line(
            f"**Left out** to stay under GitHub's comment limit: {left}. "
            "`novapod review --format json` lists everything."
        )
        page.line()
    page.line(f"<sub>Replacement and IAM analysis: {report['engine']} (CDK's diff engine).</sub>")
