"""How much of the accumulation stage fits, read at the stage sizes where it changes (a pixel
either side of each boundary, on real recordings): the row numbers that go first on a short
stage, the ranks that fit in each phase, where "(all in ddp-viz run's report)" and the long
title still fit, the micro-batch columns of a long accumulation, and the lines below the
table kept whole or not at all, the most important first."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.model import protocol
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width, fmt
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording
from tests.frames import assert_inside_and_apart

DEFAULT = "accumulate-3-micro.jsonl"  # 2 ranks, 3 micro-batches, 3 steps
EIGHT = "accumulate-8-ranks.jsonl"  # 8 ranks, 3 micro-batches, 1 step
THEME = load_theme("light")


def frame(events, step, phase, progress=1.0, w=1280, h=720):  # type: ignore[no-untyped-def]
    if isinstance(events, str):
        events = load_recording(events)
    lesson = load_lesson("accumulate-with-no-sync")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(step, phase), progress, ctx, "accumulation")


def rank_labels(f) -> list[str]:  # type: ignore[no-untyped-def]
    return [t.text for t in f.texts if t.text.startswith("rank ") and t.color != THEME.muted]


def test_a_short_stage_drops_the_row_numbers_first() -> None:
    """8 ranks, 560 px wide: at 623 px high the table only fits without the rows each
    micro-batch held ("rank 0", no row numbers); a pixel higher they are back."""
    rows = {
        (d["rank"], d["micro"]): ", ".join(str(i + 1) for i in d["rows"])
        for d in map(json.loads, (DATA / EIGHT).read_text().splitlines())
        if d["event"] == "micro_step"
    }
    short, tall = frame(EIGHT, 0, 2, w=560, h=623), frame(EIGHT, 0, 2, w=560, h=624)
    assert rank_labels(short) == [f"rank {r}" for r in range(8)]
    assert rank_labels(tall) == [f"rank {r} · rows" for r in range(8)]
    for f, shown in ((short, False), (tall, True)):
        assert_inside_and_apart(f)
        texts = {t.text for t in f.texts}
        assert all((rows[key] in texts) is shown for key in rows if key[0] == 0), shown
        assert "allreduces" in f.numbers()


def test_the_smallest_plan_is_the_fallback_when_nothing_fits() -> None:
    for h in (200, 300, 400):
        f = frame(EIGHT, 0, 2, w=560, h=h)
        assert rank_labels(f) and all(" · rows" not in s for s in rank_labels(f))


def test_one_rank_at_least_and_only_one_when_one_fits() -> None:
    f = frame(EIGHT, 0, 2, w=560, h=200)
    assert rank_labels(f) == ["rank 0"]
    more = f.text_with_key("more_ranks")
    assert more.text.startswith("+ 7 more ranks") and more.value == 7
    assert_inside_and_apart(f)


@pytest.mark.parametrize("phase", [0, 1])
def test_before_the_count_the_table_takes_the_room_below_it(phase) -> None:
    """Phases 0 and 1 draw nothing under the table: at 260 px one more rank fits than in
    phase 2, which keeps three lines for the count, the verdict and the parameters."""
    for h, before, during in ((259, 2, 2), (260, 3, 2)):
        assert len(rank_labels(frame(EIGHT, 0, phase, 0.5, h=h))) == before, h
        assert len(rank_labels(frame(EIGHT, 0, 2, h=h))) == during, h


def test_where_the_rest_of_the_ranks_are_is_said_when_it_fits() -> None:
    words, where = "+ 3 more ranks", " (all in ddp-viz run's report)"
    font = frame(EIGHT, 0, 2, w=361, h=480).text_with_key("more_ranks").font
    pad = frame(EIGHT, 0, 2, w=361, h=480).texts[0].box.x
    assert 360 - 2 * pad < estimate_width(words + where, font) <= 361 - 2 * pad
    assert frame(EIGHT, 0, 2, w=360, h=480).text_with_key("more_ranks").text == words
    assert frame(EIGHT, 0, 2, w=361, h=480).text_with_key("more_ranks").text == words + where


def test_the_long_title_while_it_fits_then_the_short_one() -> None:
    assert frame(DEFAULT, 0, 2, w=443).texts[0].text == "Step 1/3 · all-reduces"
    assert frame(DEFAULT, 0, 2, w=444).texts[0].text == "Step 1 of 3 · 3 · what DDP synchronised"


def eight_micro_batches():  # type: ignore[no-untyped-def]
    """The default run made an 8-micro-batch one: each rank's first micro-batch six times
    more before its last (the one that synchronised), micro indices 0..7."""
    out = []
    for e in load_recording(DEFAULT):
        if isinstance(e, protocol.RunStarted):
            train = {**e.scenario["train"], "accumulate": 8}
            e = replace(e, scenario={**e.scenario, "train": train})
        if isinstance(e, MicroStep):
            if e.micro == 0:
                out += [replace(e, micro=j) for j in range(7)]
            elif e.micro == 2:
                out.append(replace(e, micro=7))
            continue
        out.append(e)
    return out


@pytest.mark.parametrize(("w", "heads"), [(340, [1, None, 8]), (560, [1, 2, None, 8])])
def test_a_long_accumulation_shows_the_first_columns_a_gap_and_the_last(w, heads) -> None:
    events = eight_micro_batches()
    last = next(e for e in events if isinstance(e, MicroStep) and e.rank == 1 and e.micro == 7)
    f = frame(events, 0, 2, w=w, h=720)
    want = ["…" if j is None else f"micro {j}" for j in heads]
    assert [t.text for t in f.texts if t.text.startswith("micro ") or t.text == "…"] == want
    cell = f.text_with_key("rank1.micro7.grad.weight")
    assert cell.text == fmt(last.grads["weight"][0]) and cell.value == last.grads["weight"][0]
    assert f.text_with_key("rank1.micro7.allreduced").text == "yes"
    assert f.text_with_key("rank1.micro3.allreduced") is None  # behind the "…"
    # the current micro-batch lit while it is one of the columns, none while it is hidden
    for progress, lit in ((0.0, {"now.micro0"}), (0.5, set()), (1.0, {"now.micro7"})):
        f = frame(events, 0, 1, progress, w=w, h=720)
        assert {s.key for s in f.shapes if s.key.startswith("now.")} == lit, progress


def test_at_the_end_of_the_backward_phase_the_last_micro_batch_is_lit() -> None:
    f = frame(DEFAULT, 0, 1, 1.0)
    assert {s.key for s in f.shapes if s.key.startswith("now.")} == {"now.micro2"}


def test_a_column_no_rank_recorded_stays_empty() -> None:
    """A scenario of 4 micro-batches whose recording holds 3 a rank: the fourth column is
    drawn, and no rank's cells are made up under it."""
    events = load_recording(DEFAULT)
    train = {**events[0].scenario["train"], "accumulate": 4}
    events = [replace(events[0], scenario={**events[0].scenario, "train": train}), *events[1:]]
    f = frame(events, 0, 2)
    assert "micro 4" in f.all_text()
    assert not any(t.key.startswith(("rank0.micro3", "rank1.micro3")) for t in f.texts)
    assert f.text_with_key("rank1.micro2.allreduced").text == "yes"


def test_a_verdict_without_a_named_reason_says_rounding() -> None:
    events = [
        replace(e, full_batch_grads={n: [v[0] * (1 + 3e-5)] for n, v in e.full_batch_grads.items()})
        if isinstance(e, protocol.Reference) and e.step == 1
        else e
        for e in load_recording(DEFAULT)
    ]
    verdict = frame(events, 1, 2).text_with_key("full_batch")
    assert verdict.text == "✗ different: rounding" and verdict.color == THEME.bad


def note_lines(f) -> list[str]:  # type: ignore[no-untyped-def]
    """The note's lines: muted, left of the stage, below the count's line."""
    count = f.text_with_key("allreduces")
    return [
        t.text
        for t in f.texts
        if count is not None and t.color == THEME.muted and t.box.y > count.box.y
        and t.box.x == count.box.x and t.key != "more_ranks"
    ]  # fmt: skip


def test_the_note_is_drawn_whole_in_at_most_its_lines_or_not_at_all() -> None:
    note = (
        "no_sync() skipped 2 of 3 all-reduces: .grad added up the local gradients, and the "
        "last backward averaged the sum across the ranks."
    )
    seen = set()
    for w in range(300, 700, 20):
        for h in (500, 900, 1400):
            f = frame(DEFAULT, 0, 2, w=w, h=h)
            lines = note_lines(f)
            most = 3 if any(" · rows" in s for s in rank_labels(f)) else 2
            assert len(lines) <= most, (w, h, lines)
            assert not lines or " ".join(lines) == note, (w, h)
            seen.add(len(lines))
    assert {0, 3} <= seen  # left out where it would take more lines than it is given


@pytest.mark.parametrize(
    ("phase", "first", "then"), [(2, "allreduces", "note"), (3, "allreduces", "full_batch")]
)
def test_the_count_goes_last(phase, first, then) -> None:
    """Short of room, the count stays longest: in phase 2 over the note, in phase 3 over the
    comparison with one process (the parameters after the step come first there)."""
    seen_alone = False
    for h in range(240, 900, 4):
        f = frame(DEFAULT, 0, phase, w=560, h=h)
        has = {t.key for t in f.texts} | ({"note"} if note_lines(f) else set())
        if then in has:
            assert first in has, (h, has)
        seen_alone |= first in has and then not in has
    assert seen_alone


def cell_px(f) -> float:  # type: ignore[no-untyped-def]
    return f.text_with_key("rank0.micro0.grad.weight").font.px


@pytest.mark.parametrize(
    ("events", "sizes"),
    [
        # 3 micro-batches, 900 px high: the width decides (1.1, 1.25, 1.4 times the type)
        (DEFAULT, [(390, 900), (391, 900), (441, 900), (442, 900), (492, 900), (493, 900)]),
        # 1800 px wide: the height decides
        (DEFAULT, [(1800, 340), (1800, 341), (1800, 379), (1800, 380), (1800, 418), (1800, 419)]),
        # 8 micro-batches: the table is measured on 4 columns however many there are
        ("eight", [(472, 900), (473, 900), (534, 900), (535, 900), (597, 900), (598, 900)]),
    ],
)
def test_the_table_grows_while_it_and_seven_lines_below_still_fit(events, sizes) -> None:
    """Each size pair sits either side of a step up in the table's type: the same type at a
    pixel less, the next one up at the boundary."""
    events = eight_micro_batches() if events == "eight" else load_recording(events)
    small = cell_px(frame(events, 0, 2, w=300, h=300))
    scales = []
    for w, h in sizes:
        f = frame(events, 0, 2, w=w, h=h)
        assert_inside_and_apart(f)
        scales.append(round(cell_px(f) / small, 6))
    assert scales == [1.0, 1.1, 1.1, 1.25, 1.25, 1.4]
