"""The README stays one screen with working links, and every docs page a message points
at exists with the section it names (the site's own links: `make docs`, --strict)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from novapod.cli import _parser
from tests.aws_cli import api_call
from tests.conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
# "(docs/operations.md: Upgrading Kubernetes)" in a message, a comment or a reason.
REFERENCE = re.compile(r"docs/([\w/-]+\.md): ([^)\"]+)\)")


def headings(page: Path) -> set[str]:
    """A page's headings as text (code spans unquoted), outside fenced code."""
    found, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#+ (.+)", line)):
            found.add(match[1].replace("`", "").strip())
    return found


def test_the_readme_is_under_200_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) < 200


def test_the_readme_keeps_the_two_set_up_commands_and_the_node_versions() -> None:
    text = README.read_text(encoding="utf-8")
    assert "make synth   #" in text and "make test    #" in text
    assert "**Node.js 20, 22 or 24**" in text
    assert "non-refundable" in text


def test_every_link_of_the_readme_resolves() -> None:
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    local = [link for link in links if not link.startswith("https://")]
    assert len(local) >= 10
    missing = [link for link in local if not (ROOT / link).is_file()]
    assert missing == []


def test_every_docs_page_the_readme_links_to_is_in_the_site_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = set(re.findall(r"\(docs/([^)#]+)", README.read_text(encoding="utf-8")))
    assert pages and all(f": {page}\n" in nav for page in pages), pages


def _references() -> list[tuple[Path, str, str]]:
    found = []
    for source in sorted((ROOT / "novapod").rglob("*")):
        if source.suffix in {".py", ".yaml", ".sh"}:
            for page, section in REFERENCE.findall(source.read_text(encoding="utf-8")):
                found.append((source, page, section.strip()))
    return found


def test_the_package_points_at_docs_pages_not_at_the_readme() -> None:
    assert len(_references()) >= 3
    for source in sorted((ROOT / "novapod").rglob("*.py")):
        text = source.read_text(encoding="utf-8")
        assert "(README:" not in text and "see the README)" not in text, source


@pytest.mark.parametrize(
    ("source", "page", "section"),
    _references(),
    ids=lambda value: value.name if isinstance(value, Path) else str(value),
)
def test_each_docs_reference_names_a_page_and_its_section(
    source: Path, page: str, section: str
) -> None:
    target = DOCS / page
    assert target.is_file(), f"{source}: docs/{page} does not exist"
    assert section in headings(target), f"{source}: docs/{page} has no heading {section!r}"


def shell_commands(page: Path) -> list[str]:
    """The commands of a page's ```bash blocks: continuation lines joined, comments off,
    a closing `|| break` off, the inner command of `VAR=$(...)` taken out."""
    commands, block, fenced = [], "", False
    for line in page.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = stripped == "```bash"
            continue
        if not fenced:
            continue
        block += stripped.removesuffix("\\") + " " if stripped.endswith("\\") else stripped
        if stripped.endswith("\\"):
            continue
        command, block = block.split(" #", 1)[0].strip(), ""
        command = re.sub(r" \|\| \w+$", "", command)  # `aws ... || break`: the call itself
        inner = re.fullmatch(r"[A-Z_]+=\$\((.*)\)", command)
        commands.append(inner[1] if inner else command)
    return [c for c in commands if c]


PAGES = sorted(DOCS.glob("*.md"))
# Commands of the AWS CLI itself, not API operations: `aws s3 cp|ls`, `aws logs tail` (v2).
CLI_COMMANDS = {"s3", "configure", "logs tail", "eks update-kubeconfig", "sso login"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_aws_call_the_docs_show_is_a_real_call(page: Path) -> None:
    """`aws SERVICE OPERATION ...` in a bash block: an operation botocore knows, with
    parameters it takes (tests/aws_cli.py); a shell variable stands for an ARN, a <marked>
    placeholder for a word."""
    for command in shell_commands(page):
        words = command.split()
        if words[0] != "aws" or words[1] in CLI_COMMANDS or " ".join(words[1:3]) in CLI_COMMANDS:
            continue
        marked = re.sub(r"<[^>]+>", "PLACEHOLDER", command)  # <what goes here>
        api_call(re.sub(r'"\$[A-Z_]+"', "arn:aws:iam::111122223333:policy/example", marked))


def test_an_option_the_cli_renames_goes_by_the_cli_s_name_only() -> None:
    topic = "arn:aws:sns:us-east-1:111122223333:alerts"
    call = f"aws sns subscribe --topic-arn {topic} --protocol https"
    assert api_call(f"{call} --notification-endpoint URL")[2]["Endpoint"] == "URL"
    with pytest.raises(AssertionError, match="the CLI calls --endpoint --notification-endpoint"):
        api_call(f"{call} --endpoint URL")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_novapod_command_the_docs_show_parses(page: Path) -> None:
    parser = _parser()
    for command in shell_commands(page):
        words = shlex.split(command.split(" > ")[0])
        if words[0] == "novapod":
            parser.parse_args(words[1:])  # exits 2 on an unknown command or option


FENCE_OPENER = re.compile(r"(`{3,})[\w+-]*")


def fence_faults(text: str) -> list[str]:
    """Where a page's fenced code blocks break: a fence that does not stand alone on its
    line (Markdown then runs the block on, and mkdocs --strict loses the headings after
    it), an opener inside a block, or a block left open at the end. A block opened with
    more backticks holds shorter fences as its text (a Markdown sample's own blocks)."""
    faults: list[str] = []
    fence, opened = "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if "```" not in stripped:
            continue
        if fence and stripped == fence:
            fence, opened = "", 0
        elif fence and fence not in stripped:
            continue  # a shorter fence inside a longer one's block
        elif not fence and (match := FENCE_OPENER.fullmatch(stripped)):
            fence, opened = match[1], number
        elif fence:
            faults.append(f"line {number}: a fence inside the block opened on line {opened}")
        else:
            faults.append(f"line {number}: a fence that is not alone on its line")
    if fence:
        faults.append(f"line {opened}: a block never closed")
    return faults


def test_the_fence_check_finds_a_block_closed_on_a_paragraph_s_line() -> None:
    broken = "Redrive:\n\n```bash\naws sqs list-queues\n```Then the next paragraph.\n\n## Next\n"
    assert fence_faults(broken) == [
        "line 5: a fence inside the block opened on line 3",
        "line 3: a block never closed",
    ]
    assert fence_faults("```\na\n```\n\n- item\n\n  ```yaml\n  b: 1\n  ```\n") == []
    assert fence_faults("text ```bash\n") == ["line 1: a fence that is not alone on its line"]
    assert fence_faults("````markdown\n```mermaid\nx\n```\n````\n") == []
    assert fence_faults("````markdown\n```\n") == ["line 1: a block never closed"]


@pytest.mark.parametrize(
    "page", [README, *sorted(DOCS.rglob("*.md"))], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_code_block_of_a_page_opens_and_closes_on_its_own_line(page: Path) -> None:
    assert fence_faults(page.read_text(encoding="utf-8")) == []
