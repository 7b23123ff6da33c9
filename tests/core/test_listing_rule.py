"""The `listing` rule of `ddp-viz check` (model.rules.listing) branch by branch, on lecturers'
copies of shipped lessons: what it says for a listing that names no region, a region the
engine lacks, a statement shown only for one `${choose:…}` text, an engine whose regions do not
read, and when it stays silent (no code, a kind whose listing another test checks). Each
expected text is written here from the edit made, not read from the code under test."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from ddp_viz.model import listings
from ddp_viz.model.assets import asset
from ddp_viz.model.rules.check import check
from ddp_viz.model.rules.listing import listing_scenarios


def copy_of(tmp_path: Path, lesson_id: str, name: str = "my-lesson") -> Path:
    """A shipped lesson, copied as a lecturer's own (its own id and term, last in order)."""
    folder = tmp_path / "lessons" / name
    shutil.copytree(asset("lessons", lesson_id), folder)
    toml = (folder / "lesson.toml").read_text()
    toml = re.sub(r"^order = \d+", "order = 990", toml, count=1, flags=re.M)
    toml = re.sub(r"^terms = \[.*\]$", f'terms = ["{name} word"]', toml, count=1, flags=re.M)
    (folder / "lesson.toml").write_text(toml)
    return folder


def edit(folder: Path, old: str, new: str) -> None:
    path = folder / "lesson.toml"
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def listing_problems(folder: Path) -> list[tuple[str, str, str]]:
    """The listing rule's problems with the copy; the copy must still read (a folder that does
    not is never given to the rule, and its silence would prove nothing)."""
    problems = [p for p in check([folder]).problems if p.lesson == folder.name]
    assert not [p for p in problems if p.rule == "loads"], [p.text() for p in problems]
    return [(p.where, p.message, p.fix) for p in problems if p.rule == "listing"]


SHOW_AS_WRITTEN = "show the engine's statement as it is written there, in its order"


@pytest.mark.parametrize("lesson_id", ["ddp-pattern", "not-averaged", "uneven-inputs"])
def test_the_copies_start_clean(tmp_path, lesson_id) -> None:
    assert listing_problems(copy_of(tmp_path, lesson_id)) == []


def test_a_listing_that_names_no_region_is_told_to_list_them(tmp_path) -> None:
    folder = copy_of(tmp_path, "ddp-pattern")
    text = (folder / "lesson.toml").read_text()
    source = re.search(r"^source = \[.*\]$", text, flags=re.M)
    assert source is not None
    edit(folder, source.group(0), "source = []")
    assert listing_problems(folder) == [
        (
            "[code] source",
            "names no `# listing:` region of the engine",
            'list the regions the listing shows: `source = ["region", …]`',
        )
    ]


def test_each_missing_region_is_named_once_and_nothing_else_is_compared(tmp_path) -> None:
    """Two names the engine lacks (the first and the last of `source`), and a statement
    broken too: the regions are named, the statement is not (the listing cannot be compared
    against regions that are not there)."""
    folder = copy_of(tmp_path, "ddp-pattern")
    edit(folder, '"launch-env", "model",', '"launch-envv", "model",')
    edit(folder, '"optimizer-step", "destroy"]', '"optimizer-step", "destroy", "no-such"]')
    edit(folder, "    optimizer.step()", "    optimizer.stepp()")
    fix = "name a region the engine marks, or mark it there"
    assert listing_problems(folder) == [
        ("[code] source", "no `# listing: launch-envv` region in the engine", fix),
        ("[code] source", "no `# listing: no-such` region in the engine", fix),
    ]


def test_a_wrong_statement_is_said_once_though_every_choice_is_compared(tmp_path) -> None:
    """not-averaged's listing is compared once per `${choose:model.unused}` text (three
    scenarios); a statement outside the choice is wrong in each, and said once."""
    folder = copy_of(tmp_path, "not-averaged")
    edit(folder, "    optimizer.step()\n", "    optimizer.stepp()\n")
    found = listing_problems(folder)
    assert len(found) == 1, found
    where, message, fix = found[0]
    assert re.fullmatch(r"listing line \d+", where), where
    assert message == "`optimizer.stepp()` is not in the engine (in order)"
    assert fix == SHOW_AS_WRITTEN


@pytest.mark.parametrize("word", ["true", "false"])
def test_a_statement_shown_only_for_one_choice_is_checked(tmp_path, word) -> None:
    """The lesson's own scenario says `unused = false`: the `true` text is on screen only
    when a learner flips it, and must hold all the same."""
    folder = copy_of(tmp_path, "not-averaged")
    path = folder / "lesson.toml"
    text = path.read_text()
    table = text.index('[code.choose."model.unused"]')
    start = text.index(f'{word} = """\n', table) + len(f'{word} = """\n')
    end = text.index('"""', start)
    path.write_text(text[:start] + text[start:end] + "model.frobnicate()\n" + text[end:])
    found = listing_problems(folder)
    assert [m for _, m, _ in found] == ["`model.frobnicate()` is not in the engine (in order)"]


def test_an_engine_whose_regions_do_not_read_is_named(tmp_path, monkeypatch) -> None:
    def broken(files):  # type: ignore[no-untyped-def]
        raise listings.ListingError("engine.py:12: region 'model' nested or twice")

    monkeypatch.setattr(listings, "regions", broken)
    folder = copy_of(tmp_path, "ddp-pattern")
    assert listing_problems(folder) == [
        ("the engine", "engine.py:12: region 'model' nested or twice", "close or rename the region")
    ]


def test_a_lesson_without_code_has_nothing_to_compare(tmp_path) -> None:
    folder = copy_of(tmp_path, "ddp-pattern")
    text = (folder / "lesson.toml").read_text()
    start = text.index('listing = """')
    end = text.index('"""', start + len('listing = """')) + 3
    (folder / "lesson.toml").write_text(text[:start] + 'listing = ""' + text[end:])
    assert listing_problems(folder) == []


def test_a_kind_whose_listing_another_test_checks_is_left_to_it(tmp_path) -> None:
    """The ring lesson's listing is not a copy of its code (RunKind.listing_checked_by): a
    statement the engine lacks is that test's business, not this rule's."""
    folder = copy_of(tmp_path, "all-reduce")
    text = (folder / "lesson.toml").read_text()
    listing = text[text.index('listing = """') :]
    line = next(ln for ln in listing.splitlines()[1:] if ln.strip() and not ln.startswith("#"))
    edit(folder, line + "\n", line + "\nfrobnicate()\n")
    assert listing_problems(folder) == []


def _lesson(base: dict, choose: dict) -> SimpleNamespace:
    return SimpleNamespace(scenario=lambda: SimpleNamespace(to_dict=lambda: base), choose=choose)


def test_one_scenario_per_choice_text_with_flags_as_booleans() -> None:
    base = {"lr": 0.1, "model": {"unused": False, "seed": 3}, "steps": 4}
    lesson = _lesson(base, {"model.unused": {"false": "a", "true": "b"}, "mode": {"x": "c"}})
    got = listing_scenarios(lesson)  # type: ignore[arg-type]
    assert got == [
        base,
        {"lr": 0.1, "model": {"unused": False, "seed": 3}, "steps": 4},
        {"lr": 0.1, "model": {"unused": True, "seed": 3}, "steps": 4},
        {"lr": 0.1, "model": {"unused": False, "seed": 3}, "steps": 4, "mode": "x"},
    ]
    assert base == {"lr": 0.1, "model": {"unused": False, "seed": 3}, "steps": 4}  # untouched


def test_a_choice_of_a_table_the_scenario_lacks_makes_that_table() -> None:
    lesson = _lesson({"steps": 4}, {"train.no_sync": {"true": "t"}})
    got = listing_scenarios(lesson)  # type: ignore[arg-type]
    assert got == [{"steps": 4}, {"steps": 4, "train": {"no_sync": True}}]


def test_a_problem_reads_as_one_line_and_its_fix_below() -> None:
    from ddp_viz.model.rules import Problem

    p = Problem("my-lesson", "listing", "listing line 7", "`x()` is not in the engine", "fix it")
    assert p.text() == (
        "my-lesson: listing line 7: `x()` is not in the engine [listing]\n    fix: fix it"
    )


def test_a_statement_with_a_colon_keeps_its_words_and_its_line(tmp_path) -> None:
    """The checker's text is "listing line N: `statement` …": split at its first ": ", not
    at one inside the statement."""
    folder = copy_of(tmp_path, "ddp-pattern")
    edit(folder, "    optimizer.step()", '    optimizer.step(**{"lr": 2})')
    wrong = '`optimizer.step(**{"lr": 2})  # local, same on all`'
    found = listing_problems(folder)
    assert [(re.fullmatch(r"listing line \d+", w) is not None, m) for w, m, _ in found] == [
        (True, f"{wrong} is not in the engine (in order)")
    ]


def test_registering_a_rule_keeps_its_id_its_sentence_on_one_line_and_its_check() -> None:
    from ddp_viz.model.rules import RULES, Rule, rule

    def nothing(lesson, course):  # type: ignore[no-untyped-def]
        return ()

    try:
        assert rule("a-test-rule", "Says   this\n    over two lines.", nothing) is nothing
        assert RULES["a-test-rule"] == Rule("a-test-rule", "Says this over two lines.", nothing)
    finally:
        RULES.pop("a-test-rule", None)
