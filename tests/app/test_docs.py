"""The docs a newcomer reads, checked against the code: the README is short and links every
page; every key, event kind and field the docs name exists, and every one that exists is named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ddp_viz.cli import build_parser
from ddp_viz.model import launchspec, registry, scenario
from ddp_viz.model.assets import asset
from ddp_viz.model.dataspec import DATA_KEYS, TRAIN_KEYS
from ddp_viz.model.modelspec import DDP_KEYS, MODEL_KEYS
from ddp_viz.model.schema_doc import markdown

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
LESSON_CODE = ROOT / "src" / "ddp_viz" / "model" / "lesson.py"


def _links(path: Path) -> list[str]:
    return re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text(encoding="utf-8"))


def test_the_readme_is_short_with_the_quick_start_on_the_first_screen() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 160
    first_screen = "\n".join(lines[:40])
    assert "make run" in first_screen and "make test" in first_screen


def test_the_readme_links_every_docs_page_and_every_link_resolves() -> None:
    pages = {p.name for p in DOCS.glob("*.md")}
    linked = {Path(link).name for link in _links(README) if link.startswith("docs/")}
    assert pages <= linked, f"pages the README does not link: {sorted(pages - linked)}"
    for page in [README, *DOCS.glob("*.md")]:
        for link in _links(page):
            if not link.startswith("http"):
                assert (page.parent / link).exists(), f"{page.name}: broken link {link}"


def test_the_event_format_page_is_the_one_the_schema_generates() -> None:
    assert (DOCS / "events.md").read_text(encoding="utf-8") == markdown(), (
        "docs/events.md differs from the code: `ddp-viz schema --markdown > docs/events.md`"
    )


def _table_column(text: str, heading: str) -> list[str]:
    """The first column of the first table after ``heading`` (its header row left out)."""
    after = text.split(heading, 1)[1].splitlines()
    first = next(i for i, line in enumerate(after) if line.startswith("|"))
    rows = []
    for line in after[first + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line.split("|")[1].strip())
    return rows


def documented_lesson_keys() -> set[str]:
    text = (DOCS / "lessons.md").read_text(encoding="utf-8")
    keys: set[str] = set()
    for cell in _table_column(text, "## Lessons are folders"):
        words = re.findall(r"`([^`]+)`", cell)
        if words[0].startswith("["):  # a table and its keys: the table is the top-level key
            keys |= {w.strip("[]").split(".")[0] for w in words if w.startswith("[")}
        else:
            keys |= set(words)
    return keys


def lesson_keys_read_by_the_code() -> set[str]:
    code = LESSON_CODE.read_text(encoding="utf-8")
    return set(re.findall(r'meta(?:\.get\(|\[)"(\w+)"', code)) | set(
        re.findall(r'_need\(meta, "(\w+)"', code)
    )


def test_every_lesson_toml_key_is_documented_and_every_documented_one_is_read() -> None:
    assert documented_lesson_keys() == lesson_keys_read_by_the_code()


def documented_scenario_keys(text: str) -> set[str]:
    """Every key in the TOML examples of the page, as ``table.key`` (top-level: ``key``);
    a commented-out ``# key = …`` line documents a key too."""
    keys: set[str] = set()
    for block in re.findall(r"```toml\n(.*?)```", text, re.S):
        table = ""
        for line in block.splitlines():
            if m := re.match(r"^\[(\w+)\]", line):
                table = m.group(1)
                keys.add(table)
            elif m := re.match(r"^(?:# )?(\w+) +=", line):
                keys.add(f"{table}.{m.group(1)}" if table else m.group(1))
    return keys


def scenario_keys_in_the_code() -> set[str]:
    registry.load()
    core = {
        "model": MODEL_KEYS,
        "ddp": DDP_KEYS,
        "data": DATA_KEYS,
        "train": TRAIN_KEYS + tuple(registry.train_flags()),
        "launch": launchspec.KEYS,
    }
    keys = set(scenario.FIELDS)
    for table, spec in scenario.table_specs().items():
        names = core.get(table) or tuple(spec.from_mapping({}).to_dict())
        keys |= {table} | {f"{table}.{k}" for k in names}
    return keys


def keys_of_the_kinds_lessons() -> set[str]:
    """The keys a kind's own lessons write out in their scenario.toml (a commented-out line
    too): a kind documents its table there, in its own folders."""
    keys: set[str] = set()
    for toml in sorted(asset("lessons").glob("*/scenario.toml")):
        text = toml.read_text(encoding="utf-8")
        keys |= documented_scenario_keys(f"```toml\n{text}```")
    return keys


def test_every_scenario_key_is_documented_and_every_documented_one_exists() -> None:
    """The core's tables on the page; a kind's table on the page or in its lessons' scenario
    files (so a new kind needs no line of the core's docs)."""
    documented = documented_scenario_keys((DOCS / "lessons.md").read_text(encoding="utf-8"))
    code = scenario_keys_in_the_code()
    assert not documented - code, f"documented but not in the code: {sorted(documented - code)}"
    tables = {k.table for k in registry.kinds() if k.table is not None}
    core = {k for k in code if k.split(".")[0] not in tables}
    assert not core - documented, f"in the code but not on the page: {sorted(core - documented)}"
    kinds = code - core
    written = documented | keys_of_the_kinds_lessons()
    assert not kinds - written, (
        f"a kind's key neither on the page nor in a lesson's scenario.toml: "
        f"{sorted(kinds - written)}"
    )


def test_every_key_of_the_window_is_documented() -> None:
    pytest.importorskip("PySide6")
    from ddp_viz._qt.keys import shortcuts

    text = (DOCS / "window.md").read_text(encoding="utf-8")
    documented = set(_table_column(text, "## Keys"))
    assert documented == {key for key, _ in shortcuts()}


def test_every_command_is_documented() -> None:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    documented = {c.split()[1] for c in re.findall(r"^\| `(ddp-viz [a-z]+)\b", text, re.M)}
    assert documented == set(sub.choices)


def test_every_test_the_internals_page_names_is_where_it_says() -> None:
    """docs/internals.md names each test by its folder; a test that moves or goes is found."""
    text = (DOCS / "internals.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(tests/[\w/]+\.py)`", text))
    assert len(named) > 50
    assert not [n for n in sorted(named) if not (ROOT / n).is_file()]
