"""The rule that the code on screen is the code that ran (model.listings does the comparing)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ddp_viz.model import listings
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.lesson import Lesson
from ddp_viz.model.rules.base import Problem, found, rule


def listing_scenarios(lesson: Lesson) -> list[dict]:
    """The lesson's scenario, and one more for every other text a `${choose:…}` can show."""
    base = lesson.scenario().to_dict()
    out = [base]
    for key, texts in lesson.choose.items():
        for word in texts:
            changed = {**base}
            table, _, name = key.rpartition(".")
            value = {"true": True, "false": False}.get(word, word)
            if table:
                changed[table] = {**changed.get(table, {}), name: value}
            else:
                changed[name] = value
            out.append(changed)
    return out


def _listing(lesson: Lesson, course: Sequence[Lesson]) -> Iterator[Problem]:
    kind = lesson.run_kind()
    # no kind: the `kind` rule says so; a listing of another shape: its kind's own test checks it
    if not lesson.code.strip() or kind is None or kind.listing_checked_by:
        return
    if not lesson.source:
        yield found(
            lesson,
            "listing",
            "[code] source",
            "names no `# listing:` region of the engine",
            'list the regions the listing shows: `source = ["region", …]`',
        )
        return
    try:
        regions = listings.regions(listings.engine_files(kind.id))
    except listings.ListingError as err:
        yield found(lesson, "listing", "the engine", str(err), "close or rename the region")
        return
    missing = [name for name in lesson.source if name not in regions]
    for name in missing:
        yield found(
            lesson,
            "listing",
            "[code] source",
            f"no `# listing: {name}` region in the engine",
            "name a region the engine marks, or mark it there",
        )
    if missing:
        return
    shown = [s for name in lesson.source for s in regions[name]]
    try:
        scenarios = listing_scenarios(lesson)
    except ScenarioError:
        return  # the scenario rule says what is wrong
    # each choice's text moves the lines after it, so one mistake outside the choices has
    # another line number in each scenario: it is said once, at its line in the lesson's own
    said: set[str] = set()
    for scenario in scenarios:
        texts = [t.partition(": ") for t in listings.check(lesson.listing_for(scenario), shown)]
        fresh = [(where, message) for where, _, message in texts if message not in said]
        said.update(message for _, message in fresh)
        for where, message in fresh:
            yield found(
                lesson,
                "listing",
                where,
                message,
                "show the engine's statement as it is written there, in its order",
            )


rule(
    "listing",
    """The code on screen is the code that ran: the listing is made of the statements of the
    `# listing:` regions of the kind's engine that `[code] source` names, in their order, for
    every text a `${choose:…}` can put in; a listing that leaves engine lines out says so in a
    `# left out: …` comment. (A kind whose listing has another shape than its code names the
    test that checks it instead: `RunKind.listing_checked_by`.)""",
    _listing,
)
