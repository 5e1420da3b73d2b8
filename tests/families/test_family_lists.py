"""Every Hugging Face model type attnlab opens (`FAMILIES` in checkpoints/hf/common.py) has a tiny test fixture
(family_cases.ALL_CASES, whose built config names the model type) and is named in the README's table of model
types and in docs/checkpoint-format.md's list, with the count each of them states; neither names a model type
attnlab cannot open. A family added to `FAMILIES` alone fails here until its fixture and both lists follow."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from attnlab.checkpoints.hf.common import FAMILIES
from tests.support.family_cases import ALL_CASES

ROOT = Path(__file__).resolve().parents[2]
TICKED = re.compile(r"`([^`]+)`")


def missing_fixtures(families: dict[str, str], model_types: dict[str, str]) -> list[str]:
    """The model types of `families` that no fixture builds (`model_types`: fixture name -> its model type)."""
    return sorted(set(families) - set(model_types.values()))


def readme_table_types(readme: str) -> tuple[int, set[str]]:
    """The README's stated count ("of N model types") and the model types in its table's first column (the
    words before " with ", which names a variant's setting)."""
    count = re.search(r"\bof (\d+) model types\b", readme)
    assert count, "the README no longer says how many model types attnlab opens"
    lines = readme.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| `model_type` |"))
    named: set[str] = set()
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        family = line.split("|")[1].split(" with ")[0]  # "`bert` with `position_embedding_type` …": a variant
        named.update(TICKED.findall(family))
    return int(count.group(1)), named


def docs_list_types(doc: str) -> tuple[int, set[str]]:
    """docs/checkpoint-format.md's "Supported `model_type`s (N): ..." count and the model types it names."""
    found = re.search(r"Supported `model_type`s \((\d+)\): (.*?)\(attnlab/", doc, re.S)
    assert found, "docs/checkpoint-format.md no longer lists the supported model types"
    return int(found.group(1)), set(TICKED.findall(found.group(2)))


@pytest.fixture(scope="module")
def fixture_types() -> dict[str, str]:
    """Each fixture's name -> the model_type of the config it builds (a tiny random model each: ~1 s in all)."""
    types = {}
    for name, case in ALL_CASES.items():
        _model, hf_config = case.build()
        types[name] = hf_config["model_type"]
    return types


def test_every_family_has_a_fixture(fixture_types):
    assert missing_fixtures(FAMILIES, fixture_types) == []


def test_every_fixture_is_a_family_attnlab_opens(fixture_types):
    assert set(fixture_types.values()) <= set(FAMILIES)


def test_the_readme_table_names_every_family():
    count, named = readme_table_types((ROOT / "README.md").read_text(encoding="utf-8"))
    assert named == set(FAMILIES), (sorted(set(FAMILIES) - named), sorted(named - set(FAMILIES)))
    assert count == len(FAMILIES)


def test_the_checkpoint_docs_name_every_family():
    count, named = docs_list_types((ROOT / "docs" / "checkpoint-format.md").read_text(encoding="utf-8"))
    assert named == set(FAMILIES), (sorted(set(FAMILIES) - named), sorted(named - set(FAMILIES)))
    assert count == len(FAMILIES)


def test_the_hf_package_docstring_lists_no_families_of_its_own():
    """hf/__init__.py points to FAMILIES instead of keeping a second list that falls behind."""
    import attnlab.checkpoints.hf as hf

    named = {word for word in TICKED.findall(hf.__doc__ or "") if word in FAMILIES}
    assert not named, named
    assert "FAMILIES" in (hf.__doc__ or "")


def test_the_checks_fail_on_a_family_that_was_forgotten():
    """The checkers themselves can fail: a new model type without a fixture or a list entry is reported."""
    families = {**FAMILIES, "cohere": "cohere"}
    assert {"bart", "cohere"} <= set(missing_fixtures(families, {"gpt2": "gpt2"}))
    assert "cohere" in missing_fixtures(families, {name: name for name in FAMILIES})
    table = (
        "of 2 model types\n\n| `model_type` | what | diff |\n|---|---|---|\n"
        "| `gpt2` | x | 1 |\n| `bert` with `head_dim` | y | 2 |\n\nafter `llama`\n"
    )
    assert readme_table_types(table) == (2, {"gpt2", "bert"})
    doc = "Supported `model_type`s (1): `gpt2` (attnlab/checkpoints/hf/..."
    assert docs_list_types(doc) == (1, {"gpt2"})
