"""The precision stage when the room runs out (pure, no Qt): a table too wide loses its last
columns whole, the same ones on every row, under their own heads, never a cell under another
column's head; the caption gives way whole to a panel that needs the room; a long note keeps
its key on its first line only. Values against the raw events of the 3-rank recording."""

from __future__ import annotations

import pytest

from ddp_viz.model.frame import StageFrame, estimate_width
from ddp_viz.model.scenes import SceneContext, stage_frame
from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import Cursor, record
from tests.conftest import load_recording
from tests.frames import assert_inside_and_apart
from tests.kinds.test_conformance import lesson_of

DTYPES = [("activations", "activation"), ("params", "param"), (".grad", "grad")]
DTYPES += [("bucket", "bucket"), ("on the wire", "wire")]
ARMS = ("fp32", "bf16", "fp16", "wire_fp16", "wire_bf16")
LESSON = lesson_of("mixed_precision")
EVENTS = load_recording("mixed-precision-3-ranks.jsonl")


def frame(step: int, phase: int, w: int, h: int, theme: str = "light") -> StageFrame:
    ctx = SceneContext(w, h, load_theme(theme), LESSON.phase_text, estimate_width)
    rec = record(load_recording("mixed-precision-3-ranks.jsonl"))
    f = stage_frame(rec, Cursor(step, phase), 1.0, ctx, LESSON.scene)
    assert_inside_and_apart(f)
    return f


def head_of(f: StageFrame, words: str):
    return next(t for t in f.texts if t.text == words)


@pytest.mark.parametrize(("w", "h", "shown"), [(1800, 1000, 5), (889, 495, 5), (560, 480, 3)])
def test_the_dtype_tables_columns_are_left_out_from_the_last(w: int, h: int, shown: int) -> None:
    f = frame(4, 0, w, h)
    for i, (head, col) in enumerate(DTYPES):
        heads = [t for t in f.texts if t.text == head]
        cells = [f.text_with_key(f"dtype.{arm}.{col}") for arm in ARMS]
        if i < shown:
            assert len(heads) == 1 and all(c is not None for c in cells), (head, w)
            for c in cells:  # under its own head
                assert abs(c.box.x - heads[0].box.x) < 1, (head, c.text)
        else:
            assert heads == [] and cells == [None] * 5, (head, w)
    # the rows: one a line, the label at the left, its cells on its line
    for arm, label in zip(
        ARMS, ("float32", "autocast bf16", "autocast fp16 + scaler"), strict=False
    ):
        row = next(t for t in f.texts if t.text == label)
        cell = f.text_with_key(f"dtype.{arm}.activation")
        assert abs(row.box.y - cell.box.y) < 1 and row.box.right < cell.box.x, arm


def test_the_loss_tables_last_column_goes_first() -> None:
    wide, narrow = frame(4, 1, 1800, 1000), frame(4, 1, 560, 480)
    for arm in ("fp32", "bf16", "fp16"):
        for k in ("loss", "dloss", "dparam"):
            assert wide.text_with_key(f"{k}.{arm}") is not None
        assert narrow.text_with_key(f"loss.{arm}") is not None
        assert narrow.text_with_key(f"dloss.{arm}") is not None
        assert narrow.text_with_key(f"dparam.{arm}") is None
    assert [t.text for t in narrow.texts if t.text in ("loss", "− float32's")] == [
        "loss",
        "− float32's",
    ]
    assert not [t for t in narrow.texts if t.text == "largest |p − p₃₂|"]


def test_the_caption_gives_way_whole_to_a_panel_that_needs_the_room() -> None:
    caption = LESSON.phase_text["step"].split()[:3]  # the wire phase's caption
    first = " ".join(caption)
    assert any(t.text.startswith(first) for t in frame(4, 3, 1341, 696, "projector").texts)
    small = frame(4, 3, 889, 495, "projector")
    assert not any(w in t.text for t in small.texts for w in (first,))
    assert small.text_with_key("bytes.fp32") is not None
    # the loss phase needs fewer lines: its caption stays on the same stage
    local = " ".join(LESSON.phase_text["local"].split()[:3])
    assert any(t.text.startswith(local) for t in frame(4, 1, 889, 495, "projector").texts)


def test_a_long_note_keeps_its_key_on_its_first_line_and_two_lines_at_most() -> None:
    f = frame(4, 3, 560, 480)
    refused = [t for t in f.texts if t.key == "refused"]
    assert len(refused) == 1
    assert refused[0].text.startswith("bf16_compress_hook by its own name: TypeError")
    after = [t for t in f.texts if t.box.y > refused[0].box.y]
    assert len(after) == 1 and after[0].key == "" and after[0].value is None
    assert after[0].box.x == refused[0].box.x
    # torch's message runs past two lines at this width: the second says it was cut
    said = " ".join([refused[0].text, after[0].text])
    assert after[0].text.endswith(" …") and not refused[0].text.endswith("…")
    message = next(e for e in EVENTS if e.kind == "precision_refused").message
    whole = f"bf16_compress_hook by its own name: {message}"
    assert whole.startswith(said.removesuffix(" …")) and len(said) - 2 < len(whole)


def test_a_note_that_fits_has_no_ellipsis() -> None:
    f = frame(4, 3, 2400, 900)
    refused = [t for t in f.texts if t.key == "refused"]
    message = next(e for e in EVENTS if e.kind == "precision_refused").message
    assert [t.text for t in refused] == [f"bf16_compress_hook by its own name: {message}"]


def test_every_ranks_count_of_values_sent_as_0_in_its_colour_on_a_line() -> None:
    events = load_recording("mixed-precision-3-ranks.jsonl")
    counts = {
        e.rank: e.underflow
        for e in events
        if e.kind == "precision_step" and (e.arm, e.step) == ("wire_fp16", 4)
    }
    theme = load_theme("light")
    f = frame(4, 3, 560, 480)
    head = head_of(f, "fp16 sent as 0, by rank:")
    xs = []
    for r in range(3):
        t = f.text_with_key(f"underflow.r{r}")
        assert t.text == f"r{r} {counts[r]}" and t.color == theme.ranks[r]
        assert abs(t.box.y - head.box.y) < 1
        xs.append(t.box.x)
    assert head.box.right < xs[0] < xs[1] < xs[2]


def test_the_counts_by_rank_go_on_to_a_next_line_when_the_stage_ends() -> None:
    f = frame(4, 3, 380, 600)
    head = head_of(f, "fp16 sent as 0, by rank:")
    r0, r1, r2 = (f.text_with_key(f"underflow.r{r}") for r in range(3))
    assert abs(r0.box.y - head.box.y) < 1 and abs(r1.box.y - head.box.y) < 1
    assert r0.box.x < r1.box.x and r1.box.right <= 380
    # the last one under the line, indented past the margin, in order
    assert r2.box.y > head.box.y + head.box.h * 0.9 and head.box.x < r2.box.x < r0.box.x
    assert r2.text == "r2 38" and r2.value == 38
    below = [t for t in f.texts if t.box.y > r2.box.y + 1]
    assert below and min(t.box.y for t in below) >= r2.box.bottom - 0.5
