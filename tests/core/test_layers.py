"""The package's shape: no import cycles, small files (import rules: import-linter, make lint)."""

from __future__ import annotations

from pathlib import Path

import grimp
import pytest

# they read ddp-viz's own source files, which a mutation run rewrites (make mutants)
pytestmark = pytest.mark.source

SRC = Path(__file__).parents[2] / "src" / "ddp_viz"


def test_no_module_imports_itself_back() -> None:
    # an import under TYPE_CHECKING runs for the type checker only: that is how a cycle of
    # annotations is broken (the registry names the record it hands to a kind)
    graph = grimp.build_graph("ddp_viz", exclude_type_checking_imports=True)
    cycles = sorted(
        {
            tuple(sorted((module, imported)))
            for module in graph.modules
            for imported in graph.find_modules_directly_imported_by(module)
            if graph.chain_exists(importer=imported, imported=module)
        }
    )
    assert not cycles, cycles


def test_no_source_file_is_over_400_lines() -> None:
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert not long, long
