"""docs/adapters.md shows the minimal adapter as it is: every code block marked
`<!-- verbatim: PATH -->` is found, as written, in that file, which
tests/contract/test_example_adapter.py runs the contract against."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "adapters.md"
BLOCK = re.compile(r"<!-- verbatim: (?P<path>\S+) -->\n```\w*\n(?P<code>.*?)```", re.DOTALL)


def test_every_verbatim_block_of_the_adapters_doc_is_in_its_file() -> None:
    blocks = list(BLOCK.finditer(DOC.read_text(encoding="utf-8")))
    assert len(blocks) >= 5, "the doc lost its excerpts of the example adapter"
    for block in blocks:
        source = (ROOT / block["path"]).read_text(encoding="utf-8")
        assert block["code"] in source, f"{block['path']} no longer has:\n{block['code']}"


def test_the_adapters_doc_is_linked_from_readme_and_the_architecture() -> None:
    for page in ("README.md", "docs/architecture.md"):
        assert "adapters.md" in (ROOT / page).read_text(encoding="utf-8"), page
