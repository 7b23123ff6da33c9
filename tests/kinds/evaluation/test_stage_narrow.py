"""The evaluation stage when the room runs out (pure, no Qt): a rank's wait keeps its time and
the function it waited in, in torch's short name and cut with "…"; the heading gives its
short form; a wrapped note keeps its key and number on its first line only; a share longer
than the stage is shown from its start and says how many of its places are. Values against
the raw events of the 4-rank recording."""

from __future__ import annotations

import dataclasses
import re

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart
from tests.kinds.test_conformance import lesson_of

FOUR = "evaluation-4-ranks.jsonl"
THEME = load_theme("light")


def frame(events, phase: int, w: int = 560, h: int = 480) -> StageFrame:
    lesson = lesson_of("evaluation")
    ctx = SceneContext(w, h, THEME, lesson.phase_text, estimate_width)
    f = stage_frame(record(events), Cursor(0, phase), 1.0, ctx, lesson.scene)
    assert_inside_and_apart(f)
    return f


def key(f: StageFrame, k: str):
    t = f.text_with_key(k)
    assert t is not None, (k, f.all_text())
    return t


def test_a_narrow_stage_names_the_function_each_rank_waited_in_short() -> None:
    events = load_recording(FOUR)
    outs = {e.rank: e for e in events if e.kind == "eval_outcome" and e.attempt == "wrapper"}
    beats = {e.rank: e for e in events if e.kind == "eval_wait" and e.attempt == "wrapper"}
    f = frame(events, 2)
    assert "rank 0: model(x) · others: barrier()" in f.all_text()
    assert "through DDP" not in f.all_text().split("\n")[4]
    for r, o in outs.items():
        t = key(f, f"wait.{r}")
        assert t.value == o.seconds
        # the innermost frame's function, without its class
        name = beats[r].where[0].split(" (")[0].rsplit(".", 1)[-1]
        full = f"{o.what}: waited {o.seconds:.2f} s in {name}"
        if t.text.endswith("…"):
            assert full.startswith(t.text[:-1]) and len(t.text) > len(o.what) + 20, t.text
        else:
            assert t.text == full
        assert "DistributedDataParallel." not in t.text
    assert key(f, "wait.0").text.endswith("…")
    assert key(f, "wait.3").text == f"barrier: waited {outs[3].seconds:.2f} s in barrier"
    wide = frame(events, 2, 1800, 1000)
    assert "rank 0: model(x) through DDP · others: dist.barrier() · timeout 3 s" in wide.all_text()
    name = beats[0].where[0].split(" (")[0]
    assert "." in name  # the class's name before the function's
    assert (
        key(wide, "wait.0").text == f"forward through DDP: waited {outs[0].seconds:.2f} s in {name}"
    )


def test_a_wrapped_note_keeps_its_key_on_its_first_line_only() -> None:
    events = load_recording(FOUR)
    for phase, keys in (
        (0, ["twice"]),
        (2, ["stack.0", "error.1", "module.accuracy"]),
        (3, ["agree.same", "agree.seed_plus_rank", "weights"]),
    ):
        f = frame(events, phase)
        for k in keys:
            lines = [i for i, t in enumerate(f.texts) if t.key == k]
            assert len(lines) == 1, (phase, k)
            nxt = f.texts[lines[0] + 1]  # wrapped onto a second line, with no key of its own
            assert nxt.key == "" and nxt.value is None, (phase, k, nxt.text)
            assert nxt.box.x == f.texts[lines[0]].box.x and nxt.color == f.texts[lines[0]].color
    f = frame(events, 2)
    module = key(f, "module.accuracy")
    done = next(
        e for e in events if e.kind == "eval_outcome" and (e.attempt, e.rank) == ("module", 0)
    )
    assert module.value == done.accuracy


def test_a_share_longer_than_the_stage_is_shown_from_its_start() -> None:
    """Rank 1's share made 60 places long (its rows again and again, the sampler's padding
    added at the end): more than a small stage has room for."""
    events = []
    for e in load_recording(FOUR):
        if e.kind == "eval_share":
            n = 60
            e = dataclasses.replace(
                e,
                indices=[e.indices[i % len(e.indices)] for i in range(n)],
                padding=[False] * n,
                correct=[e.correct[i % len(e.correct)] for i in range(n)],
            )
        events.append(e)
    f = frame(events, 0)
    head = key(f, "extra_rows")
    said = " ".join(f.all_text().split())
    m = re.search(r"added 215 \(first (\d+) of 60 places shown\)", said)
    assert m, said
    shown = int(m.group(1))
    assert 0 < shown < 60
    cells = [s for s in f.shapes if s.kind == "rect" and s.fill]
    assert len(cells) == 4 * shown
    # every row is held many times: the shares say so, and no cell is a plain one
    assert all(c.fill_alpha == 130 for c in cells)
    assert head.text.startswith("25 rows → 240 places: the sampler added 215")
    wide = frame(events, 0, 4000, 1000)
    assert "places shown" not in key(wide, "extra_rows").text


def test_on_the_narrowest_stage_the_long_labels_are_cut_the_numbers_kept() -> None:
    events = load_recording(FOUR)
    mine = next(e for e in events if e.kind == "eval_numbers" and e.rank == 0)
    ref = next(e for e in events if e.kind == "eval_reference")
    f = frame(events, 1, 400, 480)
    values = {
        "rank0": mine.own[0] / mine.own[1],
        "mean": mine.mean_of_ranks,
        "padded": mine.padded_sums[0] / mine.padded_sums[1],
        "kept": mine.kept_sums[0] / mine.kept_sums[1],
        "reference": sum(ref.correct) / ref.rows,
    }
    labels = {
        "rank0": "rank 0 on its share",
        "mean": "mean of the ranks' accuracies",
        "padded": "all-reduced sums, padded shares",
        "kept": "all-reduced sums, padding dropped",
        "reference": "one process, float64, every row",
    }
    for way, value in values.items():
        t = key(f, f"acc.{way}")
        assert t.text == f"{value:.4f}"
        label = next(x for x in f.texts if abs(x.box.y - t.box.y) < 1 and x.box.x < t.box.x)
        full = labels[way]
        if label.text != full:  # cut: the start of the label, then "…", left of its number
            assert label.text.endswith("…") and full.startswith(label.text[:-1]), label.text
            assert len(label.text) > 10 and label.box.right <= t.box.x
    cut = [x.text for x in f.texts if x.text.endswith("…") and x.font.px < 13]
    assert len(cut) >= 2  # the two longest labels at least
    assert key(f, "equal.kept").text == "= reference"
