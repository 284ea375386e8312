"""The policy-type pages and tables say what the code registers: one page per registered type,
in the site's navigation, naming every shipped config of that type, linking its results and its
parity rows; the README's and the overview's tables give each type's search policy and an
example config whose `policy.type` is that type.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from zeropipe.algos.registry import ALGORITHMS
from zeropipe.config.loader import read_yaml

ROOT = Path(__file__).resolve().parents[1]
POLICIES = ROOT / "docs" / "policies"
# The ten built-in types, written out: a type added or dropped shows here and on its page.
TYPES = [
    "efficientzero",
    "gumbel_muzero",
    "muzero",
    "muzero_context",
    "muzero_rnn_full_obs",
    "sampled_efficientzero",
    "sampled_muzero",
    "sampled_unizero",
    "stochastic_muzero",
    "unizero",
]
# | `type` (or [`type`](type.md)) | family | `search` | `configs/NAME.yaml` |
TABLE_ROW = re.compile(
    r"^\| \[?`(\w+)`\]?(?:\(\w+\.md\))? \| [^|]+ \| `(\w+)` \| `(configs/\w+\.yaml)` \|$"
)


def _configs_of(policy_type: str) -> list[str]:
    """The shipped configs whose `policy.type` is `policy_type`."""
    return sorted(
        f"configs/{path.name}"
        for path in (ROOT / "configs").glob("*.yaml")
        if read_yaml(path)["policy"]["type"] == policy_type  # a `base:` config resolved
    )


def test_the_registry_holds_the_ten_documented_types():
    # a type registered by its module path (`module:name`, a test's own plugin) is not built in
    assert sorted(name for name in ALGORITHMS if ":" not in name) == TYPES


@pytest.mark.parametrize("page", [ROOT / "README.md", POLICIES / "index.md"], ids=lambda p: p.name)
def test_a_types_table_gives_each_type_its_search_and_an_example_config(page: Path):
    rows = [m.groups() for m in map(TABLE_ROW.match, page.read_text().splitlines()) if m]
    assert sorted(policy_type for policy_type, _, _ in rows) == TYPES
    for policy_type, search, config in rows:
        assert search == ALGORITHMS[policy_type].search, f"{page.name}: {policy_type}'s search"
        assert config in _configs_of(policy_type), f"{page.name}: {config} is not {policy_type}"


@pytest.mark.parametrize("policy_type", TYPES)
def test_each_type_has_a_page_with_its_configs_results_and_parity_rows(policy_type: str):
    page = POLICIES / f"{policy_type}.md"
    text = page.read_text()
    assert text.startswith(f"# {policy_type}\n")
    assert f"policies/{policy_type}.md" in (ROOT / "mkdocs.yml").read_text()
    assert f"`{ALGORITHMS[policy_type].search}`" in text, "the page names another search"
    missing = [config for config in _configs_of(policy_type) if config not in text]
    assert missing == [], f"{page.name} does not name these configs of its type"
    assert "](../results.md" in text, "no link to the results"
    assert f"](../parity.md#{policy_type})" in text, "no link to its parity rows"
    assert f'--8<-- "parity.md:{policy_type}"' in text, "its parity rows are not included"
