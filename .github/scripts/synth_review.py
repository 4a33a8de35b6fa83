#!/usr/bin/env python3
"""Synthesize every environment file (ENVIRONMENT_GLOBS) at a pull request's merge base
and at its head, review each pair with `novapod review`, and write the report that
becomes the PR comment.

Run by .github/workflows/synth-review.yml in its unprivileged job, and by hand:

    git worktree add --detach ../base "$(git merge-base origin/main HEAD)"
    make setup && make -C ../base setup
    .venv/bin/python .github/scripts/synth_review.py --base-tree ../base --head-tree . --out review

Each tree is synthesized with its own pinned toolchain (its .venv and node_modules), from
its committed cdk.context.json, with `cdk synth --no-lookups` (a lookup fails the synth
instead of calling AWS) and without AWS credentials. The head's `novapod review` compares
the two cloud assemblies. A config present on one side only is compared with an empty
assembly, so a new environment's purchases are reported too.

Writes OUT/comment.md (the comment body without its marker, within GitHub's limit),
OUT/reports/<config>.json and .md (the full reports), OUT/head-sha and OUT/pr-number.
Exit status 1 when a synthesis or review failed or a `--fail-on` gate tripped (after
writing everything), else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CONFIG = "config/default.yaml"
# Every environment file the review synthesizes: the one place that says which. Your own
# environments (config/my-env.yaml, as docs/deploying.md writes them) sit beside the
# default and are reviewed with it, so a production purchase shows in its pull request;
# so are those in folders under config/ (config/envs/prod.yaml); add a glob here for
# environments kept elsewhere. Pipeline files (a `pipeline:` key at the top) are not
# environments: the environments they list are reviewed on their own. This script runs
# on the standard library alone, so it tells them apart by that line, as
# novapod.config.is_pipeline_file does by parsing (tests check the two agree).
ENVIRONMENT_GLOBS = ("config/**/*.yaml", "config/**/*.yml")
_PIPELINE_KEY = re.compile(r"^pipeline\s*:", re.MULTILINE)
# GitHub refuses a comment body over 65,536 characters; bytes over-count characters, and
# the posting workflow adds its marker, so the body aims well below.
COMMENT_BUDGET_BYTES = 60_000
LOG_TAIL_LINES = 30
SYNTH_TIMEOUT_S = 900
REVIEW_TIMEOUT_S = 300
VALIDATE_AS_OF_ENV = "NOVAPOD_VALIDATE_AS_OF"


@dataclass(frozen=True)
class Outcome:
    ok: bool
    output: str  # stdout of a review; the log's tail of a failed step


@dataclass(frozen=True)
class Section:
    """One config's part of the comment."""

    config: str
    note: str  # what kind of comparison, or what failed
    body: str  # the review's Markdown (or a failure's log), cut to fit if need be


def listed_configs(tree: Path) -> list[str]:
    """The environment files a tree holds (ENVIRONMENT_GLOBS): config/default.yaml
    first, then the others in path order; pipeline files left out."""
    found = {
        path.relative_to(tree).as_posix()
        for pattern in ENVIRONMENT_GLOBS
        for path in tree.glob(pattern)
        if path.is_file() and not _PIPELINE_KEY.search(path.read_text(errors="replace"))
    }
    first = [DEFAULT_CONFIG] if DEFAULT_CONFIG in found else []
    return first + sorted(found - {DEFAULT_CONFIG})


def configs_to_review(base: Sequence[str], head: Sequence[str]) -> list[str]:
    """Every config listed on either side: config/default.yaml first, then path order."""
    both = set(base) | set(head)
    first = [DEFAULT_CONFIG] if DEFAULT_CONFIG in both else []
    return first + sorted(both - {DEFAULT_CONFIG})


def synth_environment(environ: Mapping[str, str], tree: Path, as_of: str) -> dict[str, str]:
    """The environment of one tree's synthesis: its own virtualenv first on PATH, no AWS
    settings at all (no credentials, profile or instance metadata to reach), and plan
    windows judged as of `as_of` (empty: now)."""
    env = {k: v for k, v in environ.items() if not k.startswith("AWS_")}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    env["PATH"] = os.pathsep.join([str(tree.resolve() / ".venv" / "bin"), environ.get("PATH", "")])
    env["CDK_DISABLE_VERSION_CHECK"] = "1"
    env["JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"] = "20"
    env.pop(VALIDATE_AS_OF_ENV, None)
    if as_of:
        env[VALIDATE_AS_OF_ENV] = as_of
    return env


def synth_command(tree: Path, config: str, outdir: Path) -> list[str]:
    # --no-lookups: a context value missing from cdk.context.json fails the synthesis
    # instead of being looked up in an account (see the pinned CLI's
    # node_modules/aws-cdk/lib/cli/cli-type-registry.json, option "lookups").
    return [
        str(tree.resolve() / "node_modules" / ".bin" / "cdk"),
        "synth",
        "--quiet",
        "--no-lookups",
        "--context",
        f"config={config}",
        "--output",
        str(outdir.resolve()),
    ]


def tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def synthesize(tree: Path, config: str, outdir: Path, as_of: str) -> Outcome:
    try:
        result = subprocess.run(  # noqa: S603 - the tree's own pinned CDK CLI
            synth_command(tree, config, outdir),
            cwd=tree,
            env=synth_environment(os.environ, tree, as_of),
            capture_output=True,
            text=True,
            timeout=SYNTH_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Outcome(False, str(error))
    return Outcome(result.returncode == 0, "" if result.returncode == 0 else tail(result.stderr))


def empty_assembly(outdir: Path, like: Path) -> None:
    """A cloud assembly with no stacks, in the schema version of `like`'s manifest."""
    version = json.loads((like / "manifest.json").read_text())["version"]
    outdir.mkdir(parents=True, exist_ok=True)
    manifest = {"version": version, "artifacts": {}}
    (outdir / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def review_command(
    head_tree: Path, base_out: Path, head_out: Path, fmt: str, fail_on: str = ""
) -> list[str]:
    command = [
        str(head_tree.resolve() / ".venv" / "bin" / "novapod"),
        "review",
        "--base",
        str(base_out.resolve()),
        "--head",
        str(head_out.resolve()),
        "--format",
        fmt,
    ]
    return [*command, "--fail-on", fail_on] if fail_on else command


def review(head_tree: Path, base_out: Path, head_out: Path, fmt: str, fail_on: str = "") -> Outcome:
    try:
        result = subprocess.run(  # noqa: S603 - the head's own novapod
            review_command(head_tree, base_out, head_out, fmt, fail_on),
            env=synth_environment(os.environ, head_tree, ""),
            capture_output=True,
            text=True,
            timeout=REVIEW_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Outcome(False, str(error))
    if result.returncode != 0:
        return Outcome(False, tail(result.stderr or result.stdout))
    return Outcome(True, result.stdout)


def fenced(text: str, info: str = "text") -> str:
    """`text` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def size(text: str) -> int:
    return len(text.encode("utf-8"))


def cut_markdown(text: str, budget: int, more: str) -> str:
    """`text` cut at a line boundary to at most `budget` bytes with `more` (the note saying
    where the rest is) appended, closing a code fence or <details> the cut left open. A
    diagram (```mermaid) the cut falls in is left out whole: half of one draws wrong."""
    if size(text) <= budget:
        return text
    kept: list[str] = []
    used = size(more) + 64  # room for the closing fence and tags
    for line in text.splitlines(keepends=True):
        if used + size(line) > budget:
            # A very long line (a policy document on one line) is cut rather than dropped.
            room = budget - used - size(" …\n")
            if room >= 80:
                kept.append(line.encode()[:room].decode(errors="ignore").rstrip("\n") + " …\n")
            break
        kept.append(line)
        used += size(line)
    closing: list[str] = []
    fence = ""
    opened_at = 0
    for index, line in enumerate(kept):
        stripped = line.strip()
        if not fence and stripped.startswith("```"):
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            opened_at = index
        elif fence and stripped == fence:
            fence = ""
    if fence and kept[opened_at].strip() == f"{fence}mermaid":
        del kept[opened_at:]
    elif fence:
        closing.append(fence)
    body = "".join(kept)
    opened = len(re.findall(r"<details\b", body)) - len(re.findall(r"</details>", body))
    closing.extend(["</details>"] * max(opened, 0))
    return body.rstrip("\n") + "\n" + "".join(f"{c}\n" for c in closing) + "\n" + more


def render_section(section: Section) -> str:
    note = f"{section.note}\n\n" if section.note else ""
    return f"### `{section.config}`\n\n{note}{section.body.strip()}\n"


def fit_sections(sections: Sequence[Section], budget: int, artifact_hint: str) -> list[str]:
    """Render every section within `budget` bytes in all: sections smaller than a fair
    share of what is left stay whole, the larger ones are cut to their share (a review
    puts purchases, stateful and security changes first, so the cut drops the tail)."""
    rendered = [render_section(s) for s in sections]
    out = list(rendered)
    remaining = budget
    order = sorted(range(len(rendered)), key=lambda i: size(rendered[i]))
    for position, index in enumerate(order):
        share = remaining // (len(order) - position)
        if size(rendered[index]) > share:
            section = sections[index]
            more = (
                f"_Cut here to fit GitHub's comment limit; the whole report is "
                f"`reports/{section.config.removesuffix('.yaml')}.md` in {artifact_hint}._\n"
            )
            head = render_section(Section(section.config, section.note, ""))
            body = cut_markdown(section.body.strip() + "\n", max(share - size(head), 0), more)
            out[index] = render_section(Section(section.config, section.note, body))
        remaining -= size(out[index])
    return out


def compose_comment(
    header: str, sections: Sequence[Section], artifact_hint: str, budget: int
) -> str:
    room = budget - size(header) - 2
    return header.rstrip("\n") + "\n\n" + "\n".join(fit_sections(sections, room, artifact_hint))


def git_head(tree: Path) -> str:
    try:
        result = subprocess.run(  # noqa: S603
            ["git", "-C", str(tree), "rev-parse", "HEAD"],  # noqa: S607 - git from PATH
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return result.stdout.strip()


@dataclass(frozen=True)
class Options:
    base_tree: Path
    head_tree: Path
    out: Path
    work: Path
    base_as_of: str
    head_as_of: str
    fail_on: str
    pr_number: str
    run_url: str
    jobs: int


def parse(argv: Sequence[str]) -> Options:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-tree", type=Path, required=True, help="checkout of the base")
    parser.add_argument("--head-tree", type=Path, required=True, help="checkout of the head")
    parser.add_argument("--out", type=Path, required=True, help="report directory (created)")
    parser.add_argument("--work", type=Path, help="cloud assemblies (default: a temp dir)")
    parser.add_argument("--base-as-of", default="", help=f"{VALIDATE_AS_OF_ENV} for the base")
    parser.add_argument("--head-as-of", default="", help=f"{VALIDATE_AS_OF_ENV} for the head")
    parser.add_argument("--fail-on", default="", help="gates passed to `novapod review`")
    parser.add_argument("--pr-number", default="", help="written to OUT/pr-number")
    parser.add_argument("--run-url", default="", help="the run whose artifact holds the reports")
    parser.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    args = parser.parse_args(argv)
    if args.pr_number and not args.pr_number.isdigit():
        parser.error(f"--pr-number must be digits, got {args.pr_number!r}")
    work = args.work or Path(tempfile.mkdtemp(prefix="synth-review-"))
    return Options(
        base_tree=args.base_tree,
        head_tree=args.head_tree,
        out=args.out,
        work=work,
        base_as_of=args.base_as_of,
        head_as_of=args.head_as_of,
        fail_on=args.fail_on,
        pr_number=args.pr_number,
        run_url=args.run_url,
        jobs=max(1, args.jobs),
    )


def assembly_dir(work: Path, side: str, config: str) -> Path:
    return work / side / config.removesuffix(".yaml")


def review_config(
    options: Options, config: str, synthesized: Mapping[tuple[str, str], Outcome | None]
) -> tuple[Section, bool]:
    """(the config's section, whether it failed or tripped a gate)"""
    outdirs = {side: assembly_dir(options.work, side, config) for side in ("base", "head")}
    outcomes = {side: synthesized[(side, config)] for side in ("base", "head")}
    for side, outcome in outcomes.items():
        if outcome is not None and not outcome.ok:
            note = f"**Synthesis failed at the {side}** (`cdk synth --no-lookups`):"
            return Section(config, note, fenced(outcome.output)), True
    note = ""
    if outcomes["base"] is None:
        note = "New in this pull request: compared with an empty assembly."
        empty_assembly(outdirs["base"], like=outdirs["head"])
    elif outcomes["head"] is None:
        note = "Removed in this pull request: compared with an empty assembly."
        empty_assembly(outdirs["head"], like=outdirs["base"])
    reports = options.out / "reports" / config.removesuffix(".yaml")
    reports.parent.mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}
    for fmt, suffix in (("json", ".json"), ("markdown", ".md")):
        outcome = review(options.head_tree, outdirs["base"], outdirs["head"], fmt)
        if not outcome.ok:
            failed = f"**`novapod review --format {fmt}` failed:**"
            return Section(config, failed, fenced(outcome.output)), True
        (reports.parent / f"{reports.name}{suffix}").write_text(outcome.output)
        written[fmt] = outcome.output
    gated = False
    if options.fail_on:
        gate = review(options.head_tree, outdirs["base"], outdirs["head"], "json", options.fail_on)
        if not gate.ok:
            gated = True
            note = f"{note}\n\n**Fails the gate** `--fail-on {options.fail_on}`.".strip()
    return Section(config, note, written["markdown"]), gated


def run(options: Options) -> int:
    base_configs = listed_configs(options.base_tree)
    head_configs = listed_configs(options.head_tree)
    configs = configs_to_review(base_configs, head_configs)
    tasks = [
        (side, config, tree, as_of)
        for config in configs
        for side, tree, listed, as_of in (
            ("base", options.base_tree, base_configs, options.base_as_of),
            ("head", options.head_tree, head_configs, options.head_as_of),
        )
        if config in listed
    ]
    synthesized: dict[tuple[str, str], Outcome | None] = {
        (side, config): None for config in configs for side in ("base", "head")
    }
    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        futures = {
            (side, config): pool.submit(
                synthesize,
                tree,
                config,
                assembly_dir(options.work, side, config),
                as_of,
            )
            for side, config, tree, as_of in tasks
        }
        for key, future in futures.items():
            synthesized[key] = future.result()

    options.out.mkdir(parents=True, exist_ok=True)
    sections: list[Section] = []
    failures: list[Section] = []
    for config in configs:
        section, bad = review_config(options, config, synthesized)
        sections.append(section)
        if bad:
            failures.append(section)

    base_sha, head_sha = git_head(options.base_tree), git_head(options.head_tree)
    where = f"[this run]({options.run_url})" if options.run_url else "this run"
    header = (
        "## novapod synth review\n\n"
        f"Merge base `{base_sha[:12]}` → head `{head_sha[:12]}`, {len(configs)} configs, "
        "each synthesized with `cdk synth --no-lookups` from the committed "
        "`cdk.context.json`, without AWS credentials. The JSON reports (the contract) and "
        f"the Markdown ones are in the `synth-review` artifact of {where}.\n"
    )
    artifact_hint = f"the `synth-review` artifact of {where}"
    comment = compose_comment(header, sections, artifact_hint, COMMENT_BUDGET_BYTES)
    (options.out / "comment.md").write_text(comment)
    (options.out / "head-sha").write_text(head_sha + "\n")
    if options.pr_number:
        (options.out / "pr-number").write_text(options.pr_number + "\n")
    for section in failures:  # the job's log says why it failed
        log = section.body if section.body.startswith("`") else ""
        print(f"{section.config}: {section.note}\n{log}".rstrip(), file=sys.stderr)
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    return run(parse(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
