"""A narrow watched stage (a projector's with the side column open, or Ctrl+T at 1280×800)
keeps the columns a practitioner reads the page for: when each rank reached the all-reduce,
and how long the first rank waited for each bucket. Less telling columns go first (host and
pid, the mean step; the tensor count, the size); nothing is cut at the stage's edge."""

from __future__ import annotations

import pytest

from ddp_viz.model.tensors import tensor_norm
from tests.frames import assert_inside_and_apart
from tests.watch.test_watch_page import frame


@pytest.mark.parametrize("theme", ["projector", "light"])
@pytest.mark.parametrize("width", [420, 480, 540, 600, 660, 720, 800])
def test_a_narrow_stage_keeps_who_reached_the_all_reduce_and_who_waited(width, theme) -> None:
    rec, f = frame(3, w=width, h=900, theme=theme)
    assert_inside_and_apart(f)
    keys = {t.key for t in f.texts}
    for r in range(rec.world_size):
        assert f"rank{r}.reached_all-reduce" in keys, (width, theme)
    waited = [k for k in keys if k.startswith("bucket") and k.endswith(".4")]
    own = [k for k in keys if k.startswith("bucket") and k.endswith(".3")]
    assert waited and len(waited) == len(own), (width, theme)


@pytest.mark.parametrize("height", [440, 480, 520, 560, 600, 640])
def test_a_short_stage_says_where_the_buckets_and_tensors_went(height) -> None:
    """A projector's stage beside eight ranks' table had no room for the buckets' rows or the
    tensors' and said nothing of either: a line says where they are instead."""
    _, f = frame(3, w=1341, h=height, theme="projector")
    assert_inside_and_apart(f)
    keys = {t.key for t in f.texts}
    assert "buckets.more" in keys or any(k.startswith("buckets.head") for k in keys), height
    if "averages.identical" in keys:  # the gradients' verdict fitted: its tensors are said too
        assert "tensors.more" in keys or any(k.startswith("spread.") for k in keys), height


def _eight_ranks() -> list:
    """The 120-tensor recording's two ranks, each copied three more times: eight ranks."""
    from dataclasses import replace

    from tests.conftest import load_recording
    from tests.watch.test_watch_page import MANY

    out = []
    for e in load_recording(MANY):
        if e.kind == "run_started":
            out.append(replace(e, world_size=8))
        elif isinstance(getattr(e, "rank", None), int) and e.kind != "watch_summary":
            out += [replace(e, rank=e.rank + 2 * k) for k in range(4)]
        else:
            out.append(e)
    return out


def test_eight_ranks_norms_that_do_not_fit_show_the_smallest_and_largest_rank() -> None:
    """At 1280×800 eight ranks' norms (a column each) did not fit the stage, and the table
    was dropped without a word, under a verdict with half the stage empty below it."""
    events = _eight_ranks()
    rec, f = frame(3, w=900, h=900, events=events)
    assert rec.world_size == 8
    assert_inside_and_apart(f)
    numbers = f.numbers()
    shown = [k.removeprefix("spread.") for k in numbers if k.startswith("spread.")]
    assert len(shown) >= 3 and not any(k.startswith("rank0.local.") for k in numbers)
    st = rec.steps[3]
    for name in shown:
        norms = [tensor_norm(st.ranks[r].local[name]) for r in range(8)]
        assert numbers[f"smallest.{name}"] == min(norms)
        assert numbers[f"largest.{name}"] == max(norms)
    # wide enough, a column per rank as before
    _, wide = frame(3, w=1900, h=900, events=events)
    assert any(k.startswith("rank7.local.") for k in wide.numbers())


def _paragraph(f, key: str) -> list[str]:  # type: ignore[no-untyped-def]
    """The lines of the paragraph whose first line carries ``key``: that line and the unkeyed
    lines right below it at its left edge."""
    first = f.text_with_key(key)
    below = sorted((t for t in f.texts if t.box.x == first.box.x), key=lambda t: t.box.y)
    out, y = [first.text], first.box.y
    for t in below:
        if t.box.y > y and not t.key and t.box.y - y < first.box.h * 1.6:
            out.append(t.text)
            y = t.box.y
        elif t.box.y > y:
            break
    return out


def test_a_paragraph_the_stage_ends_in_says_so_instead_of_stopping_mid_sentence() -> None:
    """Eight ranks on a short projector stage: the "last to the all-reduce" paragraph was cut
    at the stage's edge after "…; 5", its last words never drawn and nothing saying so."""
    events = _eight_ranks()
    _, tall = frame(3, w=700, h=3000, events=events, theme="projector")
    whole = _paragraph(tall, "stragglers")
    assert len(whole) >= 2, whole  # wraps, so a height can end inside it
    cut = 0
    for height in range(200, 1400, 8):
        _, f = frame(3, w=700, h=height, events=events, theme="projector")
        if f.text_with_key("stragglers") is None:
            continue
        shown = _paragraph(f, "stragglers")
        if len(shown) < len(whole):
            cut += 1
            assert shown[:-1] == whole[: len(shown) - 1], height
            assert shown[-1].endswith(" …"), (height, shown)
        else:
            assert shown == whole, height
    assert cut, "no height ended inside the paragraph"


def test_the_ranks_left_out_of_the_last_to_arrive_line_are_counted_in_words() -> None:
    """Four ranks each last at least once, three named: the fourth was "1 other ranks fewer
    times"."""
    from ddp_viz.model import protocol

    names = ["w"]
    events: list = [protocol.RunStarted(1, 4, 0, {"watched": True}, params=[
        {"name": "w", "shape": [2]}
    ])]  # fmt: skip
    lasts = [0, 0, 0, 0, 1, 1, 1, 2, 2, 3]  # rank 0 last 4 times, 1 three, 2 twice, 3 once
    for step, last in enumerate(lasts):
        for r in range(4):
            t = float(step)
            late = 0.02 if r == last else 0.0
            bucket = {"index": 0, "params": names, "bytes": 8}
            bucket.update(launched=t + 0.01 + late, finished=t + 0.04)
            spans = {"forward": [[t, t + 0.005]], "allreduce": [[t + 0.01 + late, t + 0.04]]}
            events.append(protocol.Timing(1, step, r, spans, buckets=[bucket]))
    _, f = frame(len(lasts) - 1, w=1900, h=2000, events=events)
    text = f.text_with_key("stragglers").text
    assert text.count("mean wait") == 3, text
    assert text.endswith("; 1 other rank fewer times"), text
