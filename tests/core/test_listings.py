"""The code on screen is the code that ran: every lesson's listing is a sequence of statements
of the `# listing:` regions of its kind's engine (ddp_viz.model.listings), for every text a
`${choose:…}` can put in, and a listing changed to something the engine does not do fails."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ddp_viz.model import listings
from ddp_viz.model.course import load_course
from ddp_viz.model.rules.listing import listing_scenarios

COURSE = load_course()
# listings written in another shape than their engine's code, and the test that checks them
# line by line against it instead (the ring's two loops are the engine's one loop)
CHECKED_ELSEWHERE = {"all-reduce": "tests/kinds/collective/test_listing_is_the_ring.py"}
WITH_LISTING = [
    lesson
    for lesson in COURSE.lessons
    if lesson.code.strip() and lesson.id not in CHECKED_ELSEWHERE
]


def test_every_listing_is_checked_against_its_engine_here_or_by_its_own_test() -> None:
    unchecked = {lesson.id for lesson in COURSE.lessons if not lesson.source}
    assert unchecked == set(CHECKED_ELSEWHERE)
    root = Path(__file__).parents[2]
    assert all((root / path).is_file() for path in CHECKED_ELSEWHERE.values())


def shown_statements(lesson, files: list[Path] | None = None) -> list[listings.Statement]:
    found = listings.regions(files or listings.engine_files(lesson.kind or "ddp_step"))
    missing = [name for name in lesson.source if name not in found]
    assert not missing, f"{lesson.id}: no `# listing: {missing[0]}` region in its engine"
    return [s for name in lesson.source for s in found[name]]


@pytest.mark.parametrize("lesson", WITH_LISTING, ids=lambda lesson: lesson.id)
def test_every_listing_names_the_engine_regions_it_shows(lesson) -> None:
    if not lesson.source:
        pytest.fail(f"{lesson.id}: [code] source names no `# listing:` region")


@pytest.mark.parametrize("lesson", WITH_LISTING, ids=lambda lesson: lesson.id)
def test_every_listing_is_its_engine_s_code_in_order(lesson) -> None:
    shown = shown_statements(lesson)
    for scenario in listing_scenarios(lesson):
        listing = lesson.listing_for(scenario)
        assert listings.check(listing, shown, lesson.id) == [], listing


def _statement_lines(listing: str) -> list[int]:
    """The first line of every statement of a listing (0-based)."""
    flat = listings.PLACEHOLDER.sub(listings.ANY, listing)
    return [s.line - 1 for s in listings.statements(flat)]


def _mutate(line: str) -> str:
    """The same line doing something else: its first name called by another name."""
    code = line.split("#")[0]
    match = re.search(r"[A-Za-z_]\w*", code)
    assert match is not None, line
    return line[: match.start()] + "not_run_" + line[match.start() :]


@pytest.mark.parametrize("lesson", WITH_LISTING, ids=lambda lesson: lesson.id)
def test_a_listing_line_changed_to_what_the_engine_does_not_do_fails(lesson) -> None:
    shown = shown_statements(lesson)
    listing = lesson.listing_for(None)
    lines = listing.splitlines()
    for n in _statement_lines(listing):
        if lines[n].split("#")[0].strip() == listings.ELIDED:
            continue  # "..." stands for what the listing leaves out: nothing to change
        changed = "\n".join([*lines[:n], _mutate(lines[n]), *lines[n + 1 :]])
        problems = listings.check(changed, shown, lesson.id)
        assert any(f"line {n + 1}:" in p for p in problems), (lines[n], problems)


def test_the_evaluation_listing_fails_if_the_engine_stops_calling_eval(tmp_path) -> None:
    """The drift the listing check exists for: code on screen the run no longer does."""
    lesson = COURSE.get("evaluation")
    files = listings.engine_files("evaluation")
    copy = tmp_path / "engine.py"
    shutil.copy(files[0], copy)
    text = copy.read_text()
    assert text.count("    model.eval()\n    with torch.no_grad():\n        correct") == 1
    copy.write_text(
        text.replace(
            "    model.eval()\n    with torch.no_grad():\n        correct",
            "    with torch.no_grad():\n        correct",
        )
    )
    assert listings.check(lesson.listing_for(None), shown_statements(lesson)) == []
    problems = listings.check(
        lesson.listing_for(None), shown_statements(lesson, [copy, *files[1:]])
    )
    assert any("`model.eval()` is not in the engine" in p for p in problems), problems


def test_lines_in_another_order_or_left_out_unsaid_fail() -> None:
    engine = listings.statements("a = f(x)\nb = g(a)\nc = h(b)\n")
    assert listings.check("a = f(x)\nb = g(a)\nc = h(b)", engine) == []
    assert listings.check("a = f(\n    x)  # a comment\nb = g(a)\nc = h(b)", engine) == []
    assert listings.check("a = f(${data.x})\nb = g(a)\nc = h(b)", engine) == []
    swapped = listings.check("b = g(a)\na = f(x)\nc = h(b)", engine)
    assert swapped == ["listing line 2: `a = f(x)` is not in the engine (in order)"]
    unsaid = listings.check("a = f(x)\nc = h(b)", engine)
    assert unsaid == ["listing: leaves engine lines out but has no `# left out: …` comment"]
    assert listings.check("a = f(x)\n# left out: g\nc = h(b)", engine) == []


def test_a_region_is_found_by_its_markers_and_self_does_not_count(tmp_path) -> None:
    engine = tmp_path / "engine.py"
    engine.write_text(
        "def f(self):\n    setup()\n    # listing: one\n    for s in range(self.n):\n"
        "        self.opt.step()\n    # end listing\n    teardown()\n"
    )
    found = listings.regions([engine])
    assert [s.key for s in found["one"]] == ["forsinrange(n):", "opt.step()"]
    assert [s.line for s in found["one"]] == [4, 5]
    engine.write_text("# listing: open\nx = 1\n")
    with pytest.raises(listings.ListingError, match="never ends"):
        listings.regions([engine])
