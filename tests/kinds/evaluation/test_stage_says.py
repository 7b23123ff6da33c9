"""What the evaluation stage says in each phase, against numbers worked out here from the raw
events of the 4-rank recording (rank 0's share the odd one: no padding) and of copies with
one value moved, so each ✓ also meets its ✗ (pure: recordings, no Qt, no torch)."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.kinds.test_conformance import lesson_of

THEME = load_theme("light")
FOUR = "evaluation-4-ranks.jsonl"


def frame(events, phase: int, w: int = 1600, h: int = 1000) -> StageFrame:
    lesson = lesson_of("evaluation")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(0, phase), 1.0, ctx, lesson.scene)


def of(events, kind: str) -> list:
    return [e for e in events if e.kind == kind]


def said(f: StageFrame) -> str:
    return " ".join(f.all_text().split())


def key(f: StageFrame, k: str):
    t = f.text_with_key(k)
    assert t is not None, (k, f.all_text())
    return t


# --- 1. shares ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["evaluation-2-ranks.jsonl", FOUR])
def test_the_shares_say_the_places_the_sampler_added_and_the_rows_held_twice(name) -> None:
    events = load_recording(name)
    shares = {e.rank: e for e in of(events, "eval_share")}
    rows = of(events, "eval_reference")[0].rows
    places = sum(len(s.indices) for s in shares.values())
    counts = Counter(i for s in shares.values() for i in s.indices)
    twice = {i: [r for r in sorted(shares) if i in shares[r].indices] for i in counts}
    twice = {i: rs for i, rs in sorted(twice.items()) if counts[i] > 1}
    assert twice and places > rows
    f = frame(events, 0)
    head = key(f, "extra_rows")
    assert head.value == places - rows
    assert head.text == f"{rows} rows → {places} places: the sampler added {places - rows}"
    line = key(f, "twice")
    named = ", ".join(f"row {i} (ranks {' and '.join(map(str, rs))})" for i, rs in twice.items())
    assert line.text == f"counted twice: {named}" and line.color == THEME.bad
    # every place a cell in its rank's lane, green when that rank's answer was right
    cells = [s for s in f.shapes if s.kind == "rect" and s.fill]
    lanes = sorted({round(c.box.y, 3) for c in cells})
    assert len(lanes) == len(shares)
    for rank, y in enumerate(lanes):
        row = sorted((c for c in cells if round(c.box.y, 3) == y), key=lambda c: c.box.x)
        share = shares[rank]
        assert [c.fill for c in row] == [THEME.ok if ok else THEME.bad for ok in share.correct]
        # a row held twice stands out: its cell is the stronger
        assert [c.fill_alpha for c in row] == [130 if i in twice else 60 for i in share.indices]
        numbers = sorted(
            (t for t in f.texts if t.text.isdigit() and abs(t.box.cy - row[0].box.cy) < 2),
            key=lambda t: t.box.x,
        )
        assert [int(t.text) for t in numbers] == share.indices, rank
        assert [t.font.bold for t in numbers] == [i in twice for i in share.indices]
        label = next(t for t in f.texts if t.text == f"rank {rank}")
        assert label.color == THEME.ranks[rank] and abs(label.box.cy - row[0].box.cy) < 2


def test_shares_that_hold_no_row_twice_say_so_in_green() -> None:
    """25 rows on 4 ranks always pad; cut to 24 rows, the padding is gone."""
    events = []
    for e in load_recording(FOUR):
        if e.kind == "eval_share" and e.indices[-1] < e.indices[0]:  # a padded last place
            e = dataclasses.replace(
                e, indices=e.indices[:-1], padding=e.padding[:-1], correct=e.correct[:-1]
            )
        if e.kind == "eval_share" and e.rank == 0:
            e = dataclasses.replace(
                e, indices=e.indices[:-1], padding=e.padding[:-1], correct=e.correct[:-1]
            )
        events.append(e)
    f = frame(events, 0)
    line = key(f, "twice")
    assert (line.text, line.color) == ("no row is counted twice", THEME.ok)
    assert key(f, "extra_rows").value == 0


def test_until_every_rank_has_evaluated_the_stage_waits() -> None:
    events = load_recording(FOUR)
    last = max(i for i, e in enumerate(events) if e.kind == "eval_share")
    cut = events[:last]  # the last share not in yet
    for phase in (0, 1):
        f = frame(cut, phase)
        assert "Waiting for the ranks to evaluate…" in f.all_text()
        assert f.text_with_key("extra_rows") is None and f.text_with_key("acc.rank0") is None


# --- 2. accuracy ----------------------------------------------------------------------------
def accuracies(events) -> dict[str, float]:
    """The four ways as rank 0 reported them, and the float64 reference, by hand."""
    mine = next(e for e in of(events, "eval_numbers") if e.rank == 0)
    ref = of(events, "eval_reference")[0]
    return {
        "rank0": mine.own[0] / mine.own[1],
        "mean": mine.mean_of_ranks,
        "padded": mine.padded_sums[0] / mine.padded_sums[1],
        "kept": mine.kept_sums[0] / mine.kept_sums[1],
        "reference": sum(ref.correct) / ref.rows,
    }


@pytest.mark.parametrize("name", ["evaluation-2-ranks.jsonl", FOUR])
def test_four_accuracies_and_which_equal_the_reference(name: str) -> None:
    events = load_recording(name)
    want = accuracies(events)
    f = frame(events, 1)
    for way, value in want.items():
        t = key(f, f"acc.{way}")
        assert t.value == pytest.approx(value, abs=1e-15) and t.text == f"{value:.4f}", way
        assert t.color == (THEME.accent if way == "reference" else THEME.text)
    assert f.text_with_key("equal.reference") is None
    for way in ("rank0", "mean", "padded", "kept"):
        equal = abs(want[way] - want["reference"]) <= 1e-12
        t = key(f, f"equal.{way}")
        assert (t.text, t.color) == (
            ("= reference", THEME.ok) if equal else ("≠ reference", THEME.bad)
        ), way
    assert key(f, "equal.kept").text == "= reference"  # every row once: the reference's sum
    assert key(f, "equal.padded").text == "≠ reference"


def test_why_each_way_differs_in_the_runs_numbers() -> None:
    events = load_recording(FOUR)
    shares = {e.rank: e for e in of(events, "eval_share")}
    numbers = {e.rank: e for e in of(events, "eval_numbers")}
    rows = of(events, "eval_reference")[0].rows
    places = sum(len(s.indices) for s in shares.values())
    counts = Counter(i for s in shares.values() for i in s.indices)
    twice = sorted(i for i, n in counts.items() if n > 1)
    sizes = ", ".join(str(int(numbers[r].own_kept[1])) for r in sorted(numbers))
    text = said(frame(events, 1))
    want = accuracies(events)
    chance = (
        "equal here by chance, though " if abs(want["rank0"] - want["reference"]) < 1e-12 else ""
    )
    assert f"rank 0 on its share: {chance}{len(shares[0].indices)} of {places} places" in text
    assert f"shares of {sizes} rows weigh alike" in text
    assert (
        f"rows {', '.join(map(str, twice))} counted twice: {places} answers for {rows} rows" in text
    )
    assert "all-reduced sums, padding dropped: every row once" in text


def test_a_way_equal_to_the_reference_by_chance_is_said_to_be() -> None:
    """Rank 0's own share moved to the reference's ratio: = reference, and "by chance"."""
    events = load_recording(FOUR)
    ref = of(events, "eval_reference")[0]
    moved = [
        dataclasses.replace(e, own=[float(sum(ref.correct)), float(ref.rows)])
        if e.kind == "eval_numbers" and e.rank == 0
        else e
        for e in events
    ]
    f = frame(moved, 1)
    assert (key(f, "equal.rank0").text, key(f, "equal.rank0").color) == ("= reference", THEME.ok)
    assert "rank 0 on its share: equal here by chance, though 7 of 28 places" in said(f)
    assert "padding dropped: equal here by chance" not in said(f)


def test_one_row_held_twice_is_named_in_the_singular() -> None:
    events = load_recording("evaluation-2-ranks.jsonl")  # 25 rows, 2 ranks: row 0 twice
    assert "row 0 counted twice: 26 answers for 25 rows" in said(frame(events, 1))


# --- 3. rank 0 alone ------------------------------------------------------------------------
def test_gloos_words_grouped_with_the_ranks_that_got_them() -> None:
    events = load_recording(FOUR)
    outs = [e for e in of(events, "eval_outcome") if e.attempt == "wrapper" and e.error]
    by: dict[str, list[int]] = {}
    for e in sorted(outs, key=lambda e: e.rank):
        by.setdefault(e.error.split("] ", 1)[-1], []).append(e.rank)
    assert len(by) == 3  # rank 0's closure, ranks 1 and 2's recv, rank 3's send
    f = frame(events, 2)
    text = said(f)
    for error, ranks in by.items():
        line = key(f, f"error.{ranks[0]}")
        assert line.color == THEME.bad
        assert f"gloo, ranks {', '.join(map(str, ranks))}: {error}" in text
    assert "(a closed connection: a peer's own timeout fired first and closed it)" in text
    assert "unbound_buffer.cc" not in text  # gloo's source file is left out


def test_without_a_closed_connection_no_word_of_one() -> None:
    events = [
        dataclasses.replace(e, error="Timed out waiting 3000ms for recv operation to complete")
        if e.kind == "eval_outcome" and e.attempt == "wrapper" and e.error
        else e
        for e in load_recording(FOUR)
    ]
    f = frame(events, 2)
    assert key(f, "error.0").text.startswith("gloo, ranks 0, 1, 2, 3: Timed out waiting")
    assert "closed connection" not in said(f)


def test_rank_0s_stack_outermost_first_and_the_module_attempt() -> None:
    events = load_recording(FOUR)
    beat = [e for e in of(events, "eval_wait") if e.rank == 0 and e.attempt == "wrapper"][-1]
    names = [w.split(" (")[0].rsplit(".", 1)[-1] for w in reversed(beat.where)]
    assert len(names) >= 2
    f = frame(events, 2)
    stack = key(f, "stack.0")
    assert " ".join(stack.text.split()) == f"rank 0's stack: {' → '.join(names)}"
    head = "rank 0: model(x) through DDP · others: dist.barrier() · timeout 3 s"
    assert head in f.all_text()
    done = next(e for e in of(events, "eval_outcome") if (e.attempt, e.rank) == ("module", 0))
    ref = of(events, "eval_reference")[0]
    same = abs(done.accuracy - sum(ref.correct) / ref.rows) < 1e-12
    line = key(f, "module.accuracy")
    assert line.value == done.accuracy and line.color == (THEME.ok if same else THEME.bad)
    assert (
        said(f).count(
            f"completed: rank 0 took {done.seconds:.3f} s, accuracy {done.accuracy:.4f} on every "
            f"row {'=' if same else '≠'} one process"
        )
        == 1
    )


def test_a_module_accuracy_off_the_reference_is_a_cross() -> None:
    events = [
        dataclasses.replace(e, accuracy=0.8)
        if e.kind == "eval_outcome" and (e.attempt, e.rank) == ("module", 0)
        else e
        for e in load_recording(FOUR)
    ]
    line = key(frame(events, 2), "module.accuracy")
    assert line.color == THEME.bad and "accuracy 0.8000 on every row ≠ one process" in line.text


def test_the_module_attempt_waits_for_every_rank() -> None:
    events = load_recording(FOUR)
    last = max(i for i, e in enumerate(events) if e.kind == "eval_outcome")
    f = frame(events[:last], 2)  # rank 3's barrier not in yet
    assert f.text_with_key("module.accuracy") is None
    dots = [t for t in f.texts if t.text == "…"]
    assert len(dots) == 1 and (dots[0].key, dots[0].color) == ("", THEME.muted)


def test_a_run_without_the_hang_says_it_skipped_it() -> None:
    events = []
    for e in load_recording(FOUR):
        if e.kind == "run_started":
            table = {**e.scenario["evaluation"], "hang": False}
            e = dataclasses.replace(e, scenario={**e.scenario, "evaluation": table})
        events.append(e)
    f = frame(events, 2)
    assert "This run skips rank 0 alone through DDP (hang = false)." in f.all_text()
    assert f.text_with_key("wait.0") is None and f.text_with_key("module.accuracy") is not None


# --- 4. seeds -------------------------------------------------------------------------------
def agreement(events, seeding: str) -> dict[int, float]:
    masks = {e.rank: e.mask for e in of(events, "dropout_mask") if e.seeding == seeding}
    base = [v for row in masks[0] for v in row]
    out = {}
    for r in sorted(masks):
        mine = [v for row in masks[r] for v in row]
        out[r] = sum(a == b for a, b in zip(base, mine, strict=True)) / len(base)
    return out


def test_the_masks_agreement_with_rank_0s_and_the_weights_after_step_1() -> None:
    events = load_recording(FOUR)
    f = frame(events, 3)
    for seeding, words in (
        ("same", "manual_seed(0) on every rank"),
        ("seed_plus_rank", "manual_seed(seed + rank)"),
    ):
        agree = agreement(events, seeding)
        same = ", ".join(f"{a:.0%}" for r, a in agree.items() if r)
        assert key(f, f"agree.{seeding}").text.startswith(f"{words}: places equal")
        assert f"{words}: places equal to rank 0's mask: {same}" in said(f)
    assert set(agreement(events, "same").values()) == {1.0}
    plus = agreement(events, "seed_plus_rank")
    assert max(a for r, a in plus.items() if r) < 1.0
    crcs = {e.weights for e in of(events, "dropout_mask") if e.seeding == "seed_plus_rank"}
    assert len(crcs) == 1
    weights = key(f, "weights")
    assert weights.color == THEME.ok
    assert "weights after step 1 with seed + rank: the same CRC-32 on every rank" in said(f)


def test_ranks_whose_weights_differ_are_a_cross() -> None:
    events = [
        dataclasses.replace(e, weights="00000000")
        if e.kind == "dropout_mask" and e.seeding == "seed_plus_rank" and e.rank == 3
        else e
        for e in load_recording(FOUR)
    ]
    f = frame(events, 3)
    assert key(f, "weights").color == THEME.bad
    assert "with seed + rank: 2 different CRC-32s" in said(f)


def test_each_ranks_mask_drawn_in_its_colour_a_cell_per_unit_kept() -> None:
    events = load_recording(FOUR)
    f = frame(events, 3)
    for r in range(4):
        kept = sum(
            v for e in of(events, "dropout_mask") if e.rank == r for row in e.mask for v in row
        )
        cells = [s for s in f.shapes if s.kind == "rect" and s.fill == THEME.ranks[r]]
        assert len(cells) == kept, r
        assert all(c.fill_alpha == 200 for c in cells)


def test_before_the_masks_the_stage_waits_for_them() -> None:
    events = [e for e in load_recording(FOUR) if e.kind != "dropout_mask"]
    f = frame(events, 3)
    t = next(t for t in f.texts if t.text == "Waiting for the first step's masks…")
    assert t.color == THEME.muted and t.box.y > f.texts[0].box.bottom


def test_each_mask_is_drawn_unit_by_unit_in_its_ranks_block_and_band() -> None:
    """Each rank's block outlined, side by side in rank order, the "same" band above the
    "seed + rank" one; a unit kept filled at its own row and column of the block."""
    events = load_recording(FOUR)
    masks = {(e.seeding, e.rank): e.mask for e in of(events, "dropout_mask")}
    f = frame(events, 3)
    outlines = [s for s in f.shapes if s.kind == "rect" and s.stroke == THEME.muted]
    assert len(outlines) == 8 and all(o.width == 1 for o in outlines)
    bands = sorted({round(o.box.y, 3) for o in outlines})
    assert len(bands) == 2
    for band, seeding in zip(bands, ("same", "seed_plus_rank"), strict=True):
        blocks = sorted((o for o in outlines if round(o.box.y, 3) == band), key=lambda o: o.box.x)
        for r, block in enumerate(blocks):
            if r:
                assert block.box.x > blocks[r - 1].box.right  # apart, in rank order
            mask = masks[(seeding, r)]
            cell = block.box.w / len(mask[0])
            assert block.box.h == pytest.approx(cell * len(mask))
            cells = [
                s
                for s in f.shapes
                if s.kind == "rect" and s.fill == THEME.ranks[r] and block.box.contains(s.box, 0.5)
            ]
            assert all(c.box.w == pytest.approx(cell) == c.box.h for c in cells)
            at = {
                (round((c.box.y - block.box.y) / cell), round((c.box.x - block.box.x) / cell))
                for c in cells
            }
            want = {(i, j) for i, row in enumerate(mask) for j, kept in enumerate(row) if kept}
            assert at == want, (seeding, r)
            label = next(
                t
                for t in f.texts
                if t.text == f"rank {r}"
                and t.box.bottom <= band + 1
                and t.box.y > band - 3 * t.box.h
            )
            assert abs(label.box.x - block.box.x) < 1 and label.color == THEME.ranks[r]
    head = key(f, "agree.seed_plus_rank")
    assert bands[0] < head.box.y < bands[1]


def test_on_a_short_stage_each_mask_shows_its_first_rows_in_visible_cells() -> None:
    events = load_recording(FOUR)
    masks = {(e.seeding, e.rank): e.mask for e in of(events, "dropout_mask")}
    f = frame(events, 3, 560, 240)
    outlines = [s for s in f.shapes if s.kind == "rect" and s.stroke == THEME.muted]
    assert len(outlines) == 8
    shown = {round(o.box.h / 6.0, 6) for o in outlines}
    assert all(o.box.w == pytest.approx(16 * 6.0) for o in outlines)  # 6 px a unit, 16 units
    (k,) = shown
    assert 1 <= k < 8 and k == int(k)
    bands = sorted({round(o.box.y, 3) for o in outlines})
    for band, seeding in zip(bands, ("same", "seed_plus_rank"), strict=True):
        blocks = sorted((o for o in outlines if round(o.box.y, 3) == band), key=lambda o: o.box.x)
        for r, block in enumerate(blocks):
            cells = [
                s
                for s in f.shapes
                if s.kind == "rect" and s.fill == THEME.ranks[r] and block.box.contains(s.box, 0.5)
            ]
            at = {
                (round((c.box.y - block.box.y) / 6), round((c.box.x - block.box.x) / 6))
                for c in cells
            }
            rows = masks[(seeding, r)][: int(k)]
            assert at == {(i, j) for i, row in enumerate(rows) for j, v in enumerate(row) if v}
