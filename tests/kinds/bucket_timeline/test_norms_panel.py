"""The buckets stage's gradient norms, from the raw events: each rank's local norm as a thin bar
and the average every rank got as a thick one, all to the scale of the largest of them, each
bar of its own rank; the average's value written beside it; and on a short stage, the tensors
in columns or cut with a count of the rest."""

from __future__ import annotations

import math

import pytest

from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import record
from tests.conftest import load_recording
from tests.kinds.bucket_timeline.test_buckets_scene import FOUR, TWO, frame_at


def norm(v) -> float:
    return v["norm"] if isinstance(v, dict) else math.sqrt(sum(x * x for x in v))


def raw_norms(name: str, step: int) -> tuple[dict[int, dict[str, float]], dict[str, float]]:
    """Each rank's local norms, and rank 0's averaged ones, of ``step`` from the raw events."""
    events = load_recording(name)
    local = {
        e.rank: {k: norm(v) for k, v in e.grads.items()}
        for e in events
        if e.kind == "local_grad" and e.step == step
    }
    avg = next(e for e in events if e.kind == "averaged_grad" and e.step == step and e.rank == 0)
    return local, {k: norm(v) for k, v in avg.grads.items()}


@pytest.mark.parametrize("step", [0, 1])
def test_each_bar_is_its_ranks_norm_to_the_scale_of_the_largest(step: int) -> None:
    local, avg = raw_norms(FOUR, step)
    frame = frame_at(record(load_recording(FOUR)), step, 3, w=2400, h=1400)
    bars = {s.key: s for s in frame.shapes if "norm." in s.key}
    theme = load_theme("light")
    for name, a in avg.items():
        values = {f"rank{r}.localnorm.{name}": local[r][name] for r in local}
        values[f"avgnorm.{name}"] = a
        top = max(values.values())
        assert len({round(v, 12) for v in values.values()}) == len(values)  # all differ
        full = bars[max(values, key=values.get)].box.w
        for key, v in values.items():
            assert bars[key].box.w == pytest.approx(full * v / top, rel=1e-9), key
            assert bars[key].fill == (theme.accent if key.startswith("avg") else theme.muted)
        # thin bars top down in rank order, the thick one under them
        ys = [bars[f"rank{r}.localnorm.{name}"].box.y for r in sorted(local)]
        assert ys == sorted(ys) and len(set(ys)) == len(ys)
        assert bars[f"avgnorm.{name}"].box.y > ys[-1]
        assert bars[f"avgnorm.{name}"].box.h > bars[f"rank0.localnorm.{name}"].box.h
        shown = frame.text_with_key(f"avgnorm.{name}")
        assert shown.value == a


@pytest.mark.parametrize(("w", "h", "cut"), [(300, 800, 6), (350, 500, 7), (1280, 720, 0)])
def test_a_narrow_stage_cuts_the_list_and_counts_the_rest(w: int, h: int, cut: int) -> None:
    rec = record(load_recording(TWO))
    names = [p.name for p in rec.params]
    frame = frame_at(rec, 2, 3, w=w, h=h, theme="projector")
    shown = [n for n in names if f"avgnorm.{n}" in {s.key for s in frame.shapes}]
    more = [t.text for t in frame.texts if t.text.startswith("… ")]
    assert shown == names[: len(names) - cut]
    assert more == ([f"… {cut} more"] if cut else [])


def test_columns_hold_every_tensor_when_the_rows_do_not() -> None:
    rec = record(load_recording(FOUR))
    names = [p.name for p in rec.params]
    frame = frame_at(rec, 1, 3, w=2400, h=560)
    bars = {s.key: s.box for s in frame.shapes if s.key.startswith("avgnorm.")}
    assert set(bars) == {f"avgnorm.{n}" for n in names}
    xs = sorted({round(b.x) for b in bars.values()})
    assert len(xs) > 1  # more than one column
    # column by column, top down, in the parameters' order
    order = sorted(names, key=lambda n: (round(bars[f"avgnorm.{n}"].x), bars[f"avgnorm.{n}"].y))
    assert order == names


@pytest.mark.parametrize(
    ("w", "head"),
    [
        (
            900,
            "‖∇‖ of each tensor: thin bars = each rank's local gradient (before the all-reduce), "
            "thick blue = the average every rank got",
        ),
        (500, "‖∇‖ per tensor: thin = each rank's local, thick blue = the average"),
        (400, "‖∇‖: thin = local per rank, thick blue = averaged"),
    ],
)
def test_the_heading_says_what_the_bars_are_in_the_words_that_fit(w: int, head: str) -> None:
    frame = frame_at(record(load_recording(TWO)), 2, 3, w=w, h=400)
    assert frame.text_with_key("grads.head").text == head


def test_columns_too_narrow_for_the_values_keep_every_tensors_bars() -> None:
    rec = record(load_recording(TWO))
    names = [p.name for p in rec.params]
    frame = frame_at(rec, 2, 3, w=600, h=600, theme="projector")
    assert {s.key for s in frame.shapes if s.key.startswith("avgnorm.")} == {
        f"avgnorm.{n}" for n in names
    }
    assert not [t for t in frame.texts if t.key.startswith("avgnorm.")]
    assert not [t for t in frame.texts if t.text.startswith("… ")]
