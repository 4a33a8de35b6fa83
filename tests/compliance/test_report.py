"""The Compliance section of docs/security.md is what `novapod compliance-report` generates."""

from __future__ import annotations

from novapod.compliance.report import (
    Acknowledged,
    acknowledgements,
    page_section,
    render,
    shipped_configs,
)
from tests.conftest import ALL_CONFIGS, ROOT


def _generated(synth) -> str:
    found = []
    for path in shipped_configs():
        result = synth(path)
        network = result.stack_names["network"]
        found += acknowledgements(result.outdir, network.removesuffix("network"))
    return render(found)


def test_the_report_covers_the_configs_the_tests_synthesize() -> None:
    assert shipped_configs() == ALL_CONFIGS


def test_the_docs_compliance_section_is_the_generated_report(synth) -> None:
    page = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    assert page_section(page) == _generated(synth), (
        "docs/security.md's Compliance section is stale: replace it with the output of "
        "`novapod compliance-report`"
    )


def test_the_section_ends_at_the_next_heading_without_its_blank_lines() -> None:
    page = "# Page\n\n## Compliance\n\ntext\n| a |\n\n\n## Next\n\nmore\n"
    assert page_section(page) == "## Compliance\n\ntext\n| a |\n"
    assert page_section("# Page\n## Compliance\n\nlast\n\n") == "## Compliance\n\nlast\n"


def test_the_report_has_a_row_per_reason_with_every_tool_rule(synth) -> None:
    rows = [line for line in _generated(synth).splitlines() if line.startswith("| `")]
    inline = [r for r in rows if "IAMNoInlinePolicy" in r]
    assert len(inline) == 1  # one reason, written once, for every inline policy
    assert "`NIST.800.53.R5-IAMNoInlinePolicy`, `HIPAA.Security-IAMNoInlinePolicy`" in inline[0]
    dlq = [r for r in rows if "`CKV_AWS_116`" in r]
    assert dlq and all("`NIST.800.53.R5-LambdaDLQ`" in r for r in dlq)


def test_render_groups_by_reason_and_escapes_table_cells() -> None:
    text = render(
        [
            Acknowledged("a | b reason", "AwsSolutions-S1", "one", "storage", "AccessLogs"),
            Acknowledged("a | b reason", "CKV_AWS_18", "one", "storage", "AccessLogsBucket"),
            Acknowledged("a | b reason", "CKV_AWS_18", "two", "storage", "AccessLogsBucket"),
        ]
    )
    (row,) = [line for line in text.splitlines() if line.startswith("| `")]
    assert row == "| `AwsSolutions-S1`, `CKV_AWS_18` | a \\| b reason | storage | 2 |"


def test_render_keeps_angle_brackets_visible_in_markdown() -> None:
    """`<name>` in a reason would be an HTML tag to Markdown, and vanish from the page."""
    text = render([Acknowledged("stack/<name>/<uuid>", "AwsSolutions-IAM5", "one", "nova", "X")])
    (row,) = [line for line in text.splitlines() if line.startswith("| `")]
    assert "stack/&lt;name>/&lt;uuid>" in row and "<name>" not in row
