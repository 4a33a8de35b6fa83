""".github/scripts/synth_review.py: which configs are synthesized and how (no lookups, no
AWS settings), how missing sides and failures are reported, and the comment's size.

The end-to-end tests run the script on two small trees whose CDK CLI and `novapod` are
stand-ins that record how they were called."""

from __future__ import annotations

import importlib.util
import json
import stat
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import ROOT

SCRIPT = ROOT / ".github" / "scripts" / "synth_review.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("synth_review", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["synth_review"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


sr = _load()


# ------------------------------------------------------------------ pure functions


def test_configs_to_review_is_the_union_default_first() -> None:
    base = ["config/a.yaml", "config/default.yaml", "config/examples/b.yaml",
            "config/examples/gone.yaml"]  # fmt: skip
    head = ["config/default.yaml", "config/examples/a.yaml", "config/examples/b.yaml"]
    assert sr.configs_to_review(base, head) == [
        "config/default.yaml",
        "config/a.yaml",
        "config/examples/a.yaml",
        "config/examples/b.yaml",
        "config/examples/gone.yaml",
    ]


def test_listed_configs_of_the_repository() -> None:
    listed = sr.listed_configs(ROOT)
    assert listed[0] == "config/default.yaml"
    assert "config/examples/single-rig-purchase.yaml" in listed
    assert listed[1:] == sorted(listed[1:])
    assert len(listed) == 1 + len(list((ROOT / "config" / "examples").glob("*.yaml")))


def test_a_users_environment_file_is_reviewed_and_a_pipeline_file_is_not(tmp_path) -> None:
    (tmp_path / "config" / "examples").mkdir(parents=True)
    (tmp_path / "config" / "default.yaml").write_text("name: default\n")
    (tmp_path / "config" / "my-env.yaml").write_text("name: prod\nregion: us-east-1\n")
    (tmp_path / "config" / "staging.yml").write_text("name: staging\n")
    (tmp_path / "config" / "examples" / "a.yaml").write_text("name: a\n")
    (tmp_path / "config" / "examples" / "b.yml").write_text("name: b\n")
    (tmp_path / "config" / "envs").mkdir()
    (tmp_path / "config" / "envs" / "prod.yaml").write_text("name: prod2\n")
    (tmp_path / "config" / "a.yaml").write_text("name: first-by-path\n")
    (tmp_path / "config" / "pipeline.example.yaml").write_text(
        "# environments below\npipeline:\n  name: p\n"
    )
    (tmp_path / "config" / "notes.txt").write_text("not yaml")
    assert sr.listed_configs(tmp_path) == [
        "config/default.yaml",
        "config/a.yaml",
        "config/envs/prod.yaml",
        "config/examples/a.yaml",
        "config/examples/b.yml",
        "config/my-env.yaml",
        "config/staging.yml",
    ]


def test_the_repository_s_pipeline_example_is_not_reviewed_as_an_environment() -> None:
    assert "config/pipeline.example.yaml" not in sr.listed_configs(ROOT)


def test_the_line_test_agrees_with_novapods_pipeline_test() -> None:
    from novapod.config import is_pipeline_file

    shipped = sorted((ROOT / "config").rglob("*.yaml"))
    assert any(is_pipeline_file(p) for p in shipped)
    listed = set(sr.listed_configs(ROOT))
    for path in shipped:
        assert (path.relative_to(ROOT).as_posix() in listed) is not is_pipeline_file(path), path


def test_synth_command_disables_lookups(tmp_path: Path) -> None:
    command = sr.synth_command(tmp_path, "config/default.yaml", tmp_path / "out")
    assert command[0] == str(tmp_path.resolve() / "node_modules" / ".bin" / "cdk")
    assert command[1:4] == ["synth", "--quiet", "--no-lookups"]
    assert command[4:6] == ["--context", "config=config/default.yaml"]


def test_synth_environment_drops_every_aws_setting(tmp_path: Path) -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/ci",
        "AWS_ACCESS_KEY_ID": "AKIA...",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_SESSION_TOKEN": "token",
        "AWS_PROFILE": "prod",
        "AWS_WEB_IDENTITY_TOKEN_FILE": "/tmp/token",
        "NOVAPOD_VALIDATE_AS_OF": "2020-01-01T00:00:00Z",
    }
    env = sr.synth_environment(environ, tmp_path, "")
    assert {k for k in env if k.startswith("AWS_")} == {"AWS_EC2_METADATA_DISABLED"}
    assert env["AWS_EC2_METADATA_DISABLED"] == "true"
    assert env["PATH"] == f"{tmp_path.resolve() / '.venv' / 'bin'}:/usr/bin"
    assert "NOVAPOD_VALIDATE_AS_OF" not in env  # empty: now
    assert env["HOME"] == "/home/ci"
    dated = sr.synth_environment(environ, tmp_path, "2026-11-30T10:00:00+00:00")
    assert dated["NOVAPOD_VALIDATE_AS_OF"] == "2026-11-30T10:00:00+00:00"


def test_fenced_outgrows_backticks_in_the_log() -> None:
    assert sr.fenced("plain") == "```text\nplain\n```"
    assert sr.fenced("a ```` b") == "`````text\na ```` b\n`````"


def test_cut_markdown_keeps_whole_lines_and_closes_what_it_cut_open() -> None:
    text = "## Purchases\n\n<details><summary>x</summary>\n\n```diff\n" + "+ line\n" * 500
    cut = sr.cut_markdown(text, 400, "_more in the artifact_\n")
    assert sr.size(cut) <= 400
    assert cut.startswith("## Purchases\n")
    assert cut.endswith("```\n</details>\n\n_more in the artifact_\n")
    assert all(line in {"+ line", "```", "</details>", ""} for line in cut.splitlines()[5:-1])


def test_cut_markdown_leaves_out_a_diagram_it_would_cut_in_half() -> None:
    chart = (
        "```mermaid\ngantt\n" + "    run :r, 2024-01-01 00:00, 2024-01-01 01:00\n" * 40 + "```\n"
    )
    text = "### 1. Purchases\n\n" + chart + "\nAfter (head):\n\n" + chart
    cut = sr.cut_markdown(text, sr.size(chart) + 300, "_more_\n")
    assert cut.count("```mermaid") == 1 and cut.count("```\n") == 1  # the first, whole
    assert chart in cut and "After (head):" in cut
    assert cut.endswith("After (head):\n\n_more_\n")


def test_cut_markdown_leaves_a_short_text_alone() -> None:
    assert sr.cut_markdown("no changes\n", 100, "more") == "no changes\n"


def section(config: str, size: int) -> object:
    """A report of `size` bytes in lines of 50."""
    return sr.Section(config, "", ("word " * 9 + "word\n") * (size // 50))


def test_cut_markdown_cuts_one_long_line_instead_of_dropping_it() -> None:
    cut = sr.cut_markdown("x" * 10_000, 1_000, "_more_\n")
    assert sr.size(cut) <= 1_000
    assert cut.startswith("x" * 800)
    assert cut.endswith(" …\n\n_more_\n")


def test_comment_keeps_small_reports_whole_and_cuts_large_ones_to_fit() -> None:
    sections = [
        section("config/default.yaml", 200),
        section("config/examples/huge.yaml", 200_000),
        section("config/examples/small.yaml", 300),
        section("config/examples/large.yaml", 90_000),
    ]
    comment = sr.compose_comment("## novapod synth review\n", sections, "the artifact", 60_000)
    assert sr.size(comment) <= 60_000
    assert sr.size(comment) > 50_000  # the room is used, not wasted
    parts = comment.split("### ")
    assert [p.split("`")[1] for p in parts[1:]] == [s.config for s in sections]
    assert sections[0].body in comment
    assert sections[2].body in comment
    assert "`reports/config/examples/huge.md` in the artifact" in comment
    assert "`reports/config/examples/large.md` in the artifact" in comment
    assert "reports/config/default.md" not in comment


def test_comment_of_ten_large_reports_stays_under_githubs_limit() -> None:
    sections = [section(f"config/examples/c{i}.yaml", 65_000) for i in range(10)]
    comment = sr.compose_comment("header\n", sections, "the artifact", sr.COMMENT_BUDGET_BYTES)
    assert len(comment) < 65_536
    assert comment.count("Cut here to fit") == 10


# ------------------------------------------------------------------- end to end

FAKE_CDK = """\
#!{python}
# Stand-in for a tree's CDK CLI: records its call, writes a one-stack assembly.
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
out = Path(args[args.index("--output") + 1])
config = args[args.index("--context") + 1].removeprefix("config=")
log = Path(__file__).resolve().parents[2] / "cdk-calls.jsonl"
with log.open("a") as f:
    f.write(json.dumps({{"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}}) + "\\n")
if "broken" in Path(config).read_text():
    print("novapod: invalid configuration " + config, file=sys.stderr)
    sys.exit(2)
out.mkdir(parents=True, exist_ok=True)
(out / "manifest.json").write_text(json.dumps({{"version": "48.0.0", "artifacts": {{"s": {{}}}}}}))
(out / "config.txt").write_text(Path(config).read_text())
"""

FAKE_NOVAPOD = """\
#!{python}
# Stand-in for `novapod review`: reads both assemblies, answers in the format asked.
import json, sys
from pathlib import Path
args = sys.argv[1:]
base, head = Path(args[args.index("--base") + 1]), Path(args[args.index("--head") + 1])
fmt = args[args.index("--format") + 1]
def read(d):
    return (d / "config.txt").read_text().strip() if (d / "config.txt").exists() else "(empty)"
before, after = read(base), read(head)
stacks = len(json.loads((base / "manifest.json").read_text())["artifacts"])
if fmt == "json":
    print(json.dumps({{"base": before, "head": after, "base_stacks": stacks}}))
else:
    print(f"**{{before}} -> {{after}}**" if before != after else "No changes.")
if "--fail-on" in args and before != after:
    sys.exit(1)
"""


def make_tree(root: Path, configs: dict[str, str]) -> Path:
    for relative, content in configs.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(content)
    for relative, text in {
        "node_modules/.bin/cdk": FAKE_CDK,
        ".venv/bin/novapod": FAKE_NOVAPOD,
    }.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.format(python=sys.executable))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return root


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    base = make_tree(
        tmp_path / "base",
        {
            "config/default.yaml": "default v1",
            "config/examples/same.yaml": "same",
            "config/examples/gone.yaml": "gone",
        },
    )
    head = make_tree(
        tmp_path / "head",
        {
            "config/default.yaml": "default v2",
            "config/examples/same.yaml": "same",
            "config/examples/new.yaml": "new",
        },
    )
    return base, head


def run_script(tmp_path: Path, base: Path, head: Path, *extra: str) -> int:
    return sr.main(
        [
            "--base-tree",
            str(base),
            "--head-tree",
            str(head),
            "--out",
            str(tmp_path / "out"),
            "--work",
            str(tmp_path / "work"),
            "--jobs",
            "2",
            *extra,
        ]
    )


def cdk_calls(tree: Path) -> list[dict]:
    return [json.loads(line) for line in (tree / "cdk-calls.jsonl").read_text().splitlines()]


def test_every_config_synthesized_per_tree_without_lookups_or_aws(
    tmp_path: Path, trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    base, head = trees
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("AWS_PROFILE", "prod")
    rc = run_script(
        tmp_path, base, head, "--base-as-of", "2026-11-01T00:00:00+00:00", "--pr-number", "12"
    )
    assert rc == 0
    for tree, expected, as_of in (
        (base, {"default", "same", "gone"}, "2026-11-01T00:00:00+00:00"),
        (head, {"default", "same", "new"}, None),
    ):
        calls = cdk_calls(tree)
        configs = {c["args"][c["args"].index("--context") + 1] for c in calls}
        assert configs == {
            f"config={'config/' if n == 'default' else 'config/examples/'}{n}.yaml"
            for n in expected
        }
        for call in calls:
            assert "--no-lookups" in call["args"]
            assert call["cwd"] == str(tree)
            assert {k for k in call["env"] if k.startswith("AWS_")} == {"AWS_EC2_METADATA_DISABLED"}
            assert call["env"]["PATH"].startswith(str(tree.resolve() / ".venv" / "bin"))
            assert call["env"].get("NOVAPOD_VALIDATE_AS_OF") == as_of
    out = tmp_path / "out"
    assert (out / "pr-number").read_text() == "12\n"
    assert json.loads((out / "reports/config/default.json").read_text()) == {
        "base": "default v1",
        "head": "default v2",
        "base_stacks": 1,
    }
    assert (out / "reports/config/examples/same.md").read_text() == "No changes.\n"


def test_a_config_on_one_side_is_compared_with_an_empty_assembly(
    tmp_path: Path, trees: tuple[Path, Path]
) -> None:
    base, head = trees
    assert run_script(tmp_path, base, head) == 0
    out = tmp_path / "out"
    new = json.loads((out / "reports/config/examples/new.json").read_text())
    assert new == {"base": "(empty)", "head": "new", "base_stacks": 0}
    gone = json.loads((out / "reports/config/examples/gone.json").read_text())
    assert (gone["base"], gone["head"]) == ("gone", "(empty)")
    empty = json.loads((tmp_path / "work/base/config/examples/new/manifest.json").read_text())
    assert empty == {"version": "48.0.0", "artifacts": {}}
    comment = (out / "comment.md").read_text()
    assert comment.startswith("## novapod synth review\n")
    assert "4 configs" in comment
    sections = comment.split("### ")[1:]
    assert [s.split("`")[1] for s in sections] == [
        "config/default.yaml",
        "config/examples/gone.yaml",
        "config/examples/new.yaml",
        "config/examples/same.yaml",
    ]
    assert "**default v1 -> default v2**" in sections[0]
    assert "Removed in this pull request" in sections[1]
    assert "New in this pull request" in sections[2]
    assert "No changes." in sections[3]


def test_a_failed_synthesis_is_shown_and_fails_the_run(
    tmp_path: Path, trees: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = trees
    (head / "config/examples/same.yaml").write_text("broken")
    assert run_script(tmp_path, base, head) == 1
    comment = (tmp_path / "out/comment.md").read_text()
    same = comment.split("### `config/examples/same.yaml`")[1].split("### ")[0]
    assert "**Synthesis failed at the head** (`cdk synth --no-lookups`):" in same
    assert "```text\nnovapod: invalid configuration config/examples/same.yaml\n```" in same
    assert "**default v1 -> default v2**" in comment  # the others are still reviewed
    assert "config/examples/same.yaml: **Synthesis failed at the head**" in capsys.readouterr().err


def test_fail_on_gate_marks_the_config_and_fails_after_writing(
    tmp_path: Path, trees: tuple[Path, Path]
) -> None:
    base, head = trees
    rc = run_script(tmp_path, base, head, "--fail-on", "purchase,iam-broadening")
    assert rc == 1
    comment = (tmp_path / "out/comment.md").read_text()
    gated = [s.split("`")[1] for s in comment.split("### ")[1:] if "Fails the gate" in s]
    assert gated == [
        "config/default.yaml",
        "config/examples/gone.yaml",
        "config/examples/new.yaml",
    ]
    assert "`--fail-on purchase,iam-broadening`" in comment


def test_no_gate_no_failure(tmp_path: Path, trees: tuple[Path, Path]) -> None:
    base, head = trees
    assert run_script(tmp_path, base, head) == 0
    assert "Fails the gate" not in (tmp_path / "out/comment.md").read_text()


def test_pr_number_must_be_digits(tmp_path: Path, trees: tuple[Path, Path]) -> None:
    base, head = trees
    with pytest.raises(SystemExit) as exit_:
        run_script(tmp_path, base, head, "--pr-number", "1; echo")
    assert exit_.value.code == 2
