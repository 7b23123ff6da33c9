"""The core names no kind of run: every name a registered kind brings (its id, its scenario
table, its scenes, its events, its quiz quantities) is looked for in every core module, in the
code and its strings (docstrings and comments are prose, not code, and are not read)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from ddp_viz.model import registry
from ddp_viz.model.event_base import EVENT_TYPES

# they read ddp-viz's own source files, which a mutation run rewrites (make mutants)
pytestmark = pytest.mark.source

SRC = Path(__file__).parents[2] / "src" / "ddp_viz"


def kind_words() -> dict[str, str]:
    """Every word that names something of a kind (its id, table, scenes and quantities), with
    the kind it names."""
    words: dict[str, str] = {}
    for kind in registry.kinds():
        names = {kind.id, *kind.scenes, *kind.quantities}
        if kind.table:
            names.add(kind.table)
        words.update(dict.fromkeys(names, kind.id))
    return words


def event_words() -> dict[str, str]:
    """Every event a kind defines, by the word that names it in the stream."""
    return {
        name: cls.__module__.split(".")[2]
        for name, cls in EVENT_TYPES.items()
        if cls.__module__.startswith(registry.KINDS_PACKAGE + ".")
    }


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.add(id(value))
    return out


def _identifier_parts(name: str) -> set[str]:
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    parts = [p for p in snake.split("_") if p]
    # every run of consecutive parts: build_ring holds "ring", ring_step_event "ring_step"
    return {"_".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, len(parts) + 1)}


def mentions(source: str, words: set[str], events: frozenset[str] = frozenset()) -> set[str]:
    """The words of ``words`` that ``source`` names in its code or its non-doc strings, and the
    ``events`` it names as strings of their own (an event travels by its word; in prose or as
    an identifier the same word, ``waiting``, names no event)."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Name):
            names = [node.id]
        elif isinstance(node, ast.Attribute):
            names = [node.attr]
        elif isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef):
            names = [node.name]
        elif isinstance(node, ast.alias):
            names = node.name.split(".")
        elif isinstance(node, ast.arg) or (isinstance(node, ast.keyword) and node.arg):
            names = [node.arg]
        for name in names:
            found |= _identifier_parts(name) & words
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            tokens = set(re.findall(r"[A-Za-z0-9_]+", node.value.lower()))
            found |= tokens & words
            if node.value in events:  # an event's word as a string of its own, not prose
                found.add(node.value)
    return found


def core_files() -> list[Path]:
    return [p for p in SRC.rglob("*.py") if "kinds" not in p.relative_to(SRC).parts]


# Words a core module may spell although a kind's name is spelled the same, each in the one
# module that defines it (none now: ``[train] checkpoint`` moved to the kind that reads it).
# Anywhere else in the core the word is an offence.
SAME_SPELLING: dict[str, set[str]] = {}


def test_no_core_module_names_a_kind() -> None:
    words, events = kind_words(), event_words()
    assert "collective" in words and "ring_step" in events  # the registry was read
    offences = {}
    for path in core_files():
        rel = str(path.relative_to(SRC))
        found = mentions(path.read_text(encoding="utf-8"), set(words), frozenset(events))
        hits = found - SAME_SPELLING.get(rel, set())
        if hits:
            offences[rel] = sorted(hits)
    assert not offences, offences


def test_the_check_sees_a_kind_named_in_code_and_strings_but_not_in_prose() -> None:
    words, events = {"ring", "collective"}, frozenset({"ring_step", "waiting"})
    assert mentions("from x import build_ring\n", words) == {"ring"}
    assert mentions('if e.kind == "waiting":\n    pass\n', words, events) == {"waiting"}
    assert mentions("waiting = now - since\n", words, events) == set()
    assert mentions('text = "Waiting for the ranks"\n', words, events) == set()
    assert mentions('if "collective" in scenario:\n    pass\n', words) == {"collective"}
    assert mentions("record.collective.agree()\n", words) == {"collective"}
    assert mentions('kind = "ring_step"\n', words, events) >= {"ring_step"}
    assert (
        mentions('def f():\n    """a ring all-reduce"""\n    # the next collective\n', words)
        == set()
    )
    assert mentions("string = 1\n", words) == set()
