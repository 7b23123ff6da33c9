"""The accumulation stage when its ranks do not agree, on a real 4-rank recording changed on its
last rank: a rank whose hook ran once more is counted rank by rank (no single count), a rank
whose parameters moved makes "✗ ranks differ" in the bad colour, and the words for one step and
for several. Expected counts come from the raw ``micro_step`` lines, read here with ``json``."""

from __future__ import annotations

import json
from dataclasses import replace

from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.model import protocol
from ddp_viz.model.course import load_lesson
from ddp_viz.model.frame import estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import DATA, load_recording

FOUR = "accumulate-4-ranks.jsonl"  # 4 ranks, 3 micro-batches, no_sync around both, 2 steps
THEME = load_theme("light")


def frame(events, step: int, phase: int, w: int = 1280, h: int = 720):  # type: ignore[no-untyped-def]
    lesson = load_lesson("accumulate-with-no-sync")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    return stage_frame(record(events), Cursor(step, phase), 1.0, ctx, "accumulation")


def synced(step: int) -> dict[int, int]:
    """Each rank's backward passes that all-reduced at ``step``, from the raw lines."""
    lines = [json.loads(ln) for ln in (DATA / FOUR).read_text().splitlines() if ln.strip()]
    out: dict[int, int] = {}
    for d in lines:
        if d["event"] == "micro_step" and d["step"] == step:
            out[d["rank"]] = out.get(d["rank"], 0) + bool(d["allreduced"])
    return out


def test_ranks_whose_hook_ran_a_different_number_of_times_are_counted_each() -> None:
    want = synced(0)
    assert want == {0: 1, 1: 1, 2: 1, 3: 1}
    events = [
        replace(e, allreduced=[0]) if isinstance(e, MicroStep) and (e.step, e.rank, e.micro)
        == (0, 3, 0) else e
        for e in load_recording(FOUR)
    ]  # fmt: skip
    f = frame(events, 0, 2)
    line = f.text_with_key("allreduces")
    assert line.value is None  # no one count for every rank
    text = " ".join(f.all_text().split())
    assert (
        "backward passes that all-reduced, of 3: rank 0: 1 · rank 1: 1 · rank 2: 1 · rank 3: 2 "
        "(counted by DDP's comm hook)"
    ) in text
    assert "on every rank" not in text
    # the cell of the backward that synchronised: "yes", in the accent colour, in bold
    cell = f.text_with_key("rank3.micro0.allreduced")
    assert (cell.text, cell.color, cell.font.bold, cell.value) == ("yes", THEME.accent, True, 1.0)
    cell = f.text_with_key("rank3.micro1.allreduced")
    assert (cell.text, cell.color, cell.font.bold, cell.value) == ("no", THEME.muted, False, 0.0)


def test_the_same_count_on_every_rank_is_one_number() -> None:
    f = frame(load_recording(FOUR), 1, 2)
    line = f.text_with_key("allreduces")
    assert line.value == synced(1)[0] == 1
    assert line.text.startswith("1 of 3 backward passes all-reduced on every rank")


def test_parameters_that_moved_on_the_last_rank_make_ranks_differ() -> None:
    events = [
        replace(e, params={**e.params, "bias": [e.params["bias"][0] + 0.5]})
        if isinstance(e, protocol.Params) and e.step == 1 and e.rank == 3
        else e
        for e in load_recording(FOUR)
    ]
    f = frame(events, 1, 3)
    agree = f.text_with_key("agree")
    assert agree.text.endswith("✗ ranks differ") and agree.color == THEME.bad
    f = frame(load_recording(FOUR), 1, 3)
    agree = f.text_with_key("agree")
    assert agree.text.endswith("✓ all ranks equal") and agree.color == THEME.ok


def test_the_one_process_line_counts_its_steps() -> None:
    text = " ".join(frame(load_recording(FOUR), 0, 3).all_text().split())
    assert "one process, one batch a step, after 1 step:" in text
    text = " ".join(frame(load_recording(FOUR), 1, 3).all_text().split())
    assert "one process, one batch a step, after 2 steps:" in text


EIGHT = "accumulate-8-ranks.jsonl"


def test_ranks_that_do_not_fit_are_counted_in_words() -> None:
    events = load_recording(EIGHT)
    for h, hidden in ((880, 0), (800, 1), (720, 2), (480, 3)):
        f = frame(events, 0, 2, h=h)
        shown = {k.split(".")[0] for k in f.numbers() if k.startswith("rank")}
        assert len(shown) == 8 - hidden
        assert shown == {f"rank{r}" for r in range(8 - hidden)}  # the first ranks, in order
        line = f.text_with_key("more_ranks")
        if not hidden:
            assert line is None
            continue
        words = f"+ {hidden} more rank{'s' if hidden > 1 else ''}"
        assert line.text == f"{words} (all in ddp-viz run's report)" and line.value == hidden
        assert line.color == THEME.muted
    narrow = frame(events, 0, 2, w=340, h=480).text_with_key("more_ranks")
    assert narrow.text == "+ 3 more ranks"  # no room for where the rest are


def test_the_current_micro_batch_is_lit_down_its_whole_column() -> None:
    events = load_recording(FOUR)
    for progress, j in ((0.0, 0), (0.4, 1), (0.99, 2)):
        lesson = load_lesson("accumulate-with-no-sync")
        ctx = SceneContext(1280, 720, THEME, lesson.phase_text, estimate_width)
        f = stage_frame(record(events), Cursor(0, 1), progress, ctx, "accumulation")
        (lit,) = [s for s in f.shapes if s.key.startswith("now.")]
        assert lit.key == f"now.micro{j}" and lit.fill == THEME.highlight
        head = next(t for t in f.texts if t.text == f"micro {j + 1}")
        assert lit.box.x <= head.box.cx <= lit.box.right and lit.box.y <= head.box.y
        for r in range(4):  # every rank's cells of that micro-batch, top to bottom
            for key in (f"rank{r}.micro{j}.grad.weight", f"rank{r}.micro{j}.allreduced"):
                cell = f.text_with_key(key).box
                assert lit.box.x <= cell.cx <= lit.box.right, key
                assert lit.box.y <= cell.y and cell.bottom <= lit.box.bottom + 0.5, key
        for other in range(3):
            if other != j:
                cell = f.text_with_key(f"rank0.micro{other}.grad.weight")
                assert cell is None or not (lit.box.x <= cell.box.cx <= lit.box.right)
