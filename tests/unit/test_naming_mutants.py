"""Plan naming, pinned where `make mutation` found changes no test noticed.

Names are literal strings, never the output of the function under test: a plan's name
is its only idempotency key, so a changed name buys the plan again. Mutants left alive
on purpose are listed in tests/mutation_equivalents.md.
"""

from __future__ import annotations

import pytest

from novapod.capacity.naming import name_head, split_name, training_plan_name
from tests.unit.golden import REQUEST


def test_a_short_head_is_kept_whole() -> None:
    assert name_head("dev", "main") == "novapod-dev-main"


def test_a_long_head_is_cut_to_55_characters_so_the_digest_fits_in_64() -> None:
    # 13 + 50 characters: cut at 55, which leaves room for "-" and 8 digest characters.
    head = name_head("prod", "a" * 50)
    assert head == "novapod-prod-" + "a" * 42
    assert len(head) == 55


def test_a_cut_that_ends_on_a_dash_drops_the_dash() -> None:
    # The 55th character is the "-" after 41 a's: a name must not hold "--<digest>".
    assert name_head("prod", "a" * 41 + "-bbbb") == "novapod-prod-" + "a" * 41


def test_a_cut_keeps_a_dash_inside_the_head() -> None:
    assert name_head("prod", "-" + "a" * 50) == "novapod-prod--" + "a" * 41


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("novapod-dev-main-e41dea05", ("novapod-dev-main", "e41dea05")),
        ("novapod-dev-main-notadigest", None),  # novapod's head, but no digest
        ("novapod-dev-main-E41DEA05", None),  # digests are lower-case hex
        ("novapod-dev-main-e41dea0", None),  # 7 characters
        ("novapod-dev-main-e41dea05a", None),  # 9 characters
        ("someone-dev-main-e41dea05", None),  # a digest, but not novapod's head
        ("my-own-plan", None),
    ],
)
def test_only_names_novapod_derives_split_into_head_and_digest(
    name: str, parts: tuple[str, str] | None
) -> None:
    assert split_name(name) == parts


def test_a_name_the_api_would_refuse_is_reported_with_the_name() -> None:
    # The config's patterns keep this from happening; the function still says why.
    with pytest.raises(ValueError, match=r"'novapod-dev_x-main-[0-9a-f]{8}' is not a valid plan"):
        training_plan_name("dev_x", REQUEST)
