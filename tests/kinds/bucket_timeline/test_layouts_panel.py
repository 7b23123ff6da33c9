"""The buckets stage's two layouts, mid-run and after it: step 1's single bucket beside the
rebuilt ones, the current one in bold, each bucket's parameters and its size from the raw
``bytes`` (KiB, as DDP counts), and "not run yet" while step 2 has not arrived."""

from __future__ import annotations

from ddp_viz.model.theme import load_theme
from ddp_viz.model.timeline import record
from tests.conftest import load_recording
from tests.kinds.bucket_timeline.test_buckets_scene import FOUR, frame_at

THEME = load_theme("light")


def size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    return f"{n / 1024:.3g} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.3g} MiB"


def short(name: str) -> str:
    return name.replace("weight", "w").replace("bias", "b")


def raw_layout(events, step: int) -> list[str]:
    t = next(e for e in events if e.kind == "timing" and e.step == step and e.rank == 0)
    return [
        f"b{i} {' '.join(short(n) for n in b['params'])} {size(b['bytes'])}"
        for i, b in enumerate(sorted(t.buckets, key=lambda b: b["index"]))
    ]


def texts(frame) -> dict[str, object]:
    return {" ".join(t.text.split()): t for t in frame.texts}


def test_both_layouts_list_each_bucket_with_its_size_and_the_current_one_is_bold() -> None:
    events = load_recording(FOUR)
    rec = record(events)
    first, rebuilt = raw_layout(events, 0), raw_layout(events, 1)
    assert len(first) == 1 and len(rebuilt) > 1
    heads = ("rank 0's buckets in step 1", "from step 2 on, in all-reduce order")
    for step, current, other in ((0, *heads), (1, *reversed(heads))):
        said = texts(frame_at(rec, step, 0, w=2400, h=1400))
        for line in first + rebuilt:
            assert line in said, (step, line)
        assert said[current].font.bold and said[current].color == THEME.text
        assert not said[other].font.bold and said[other].color == THEME.muted
        for line in rebuilt:
            assert said[line].color == (THEME.text if step == 1 else THEME.muted)


def test_mid_run_the_rebuilt_layout_is_not_run_yet() -> None:
    events = load_recording(FOUR)
    upto = [e for e in events if getattr(e, "step", 0) in (0, None) and e.kind != "run_finished"]
    upto = [e for e in upto if e.kind != "backward_cost"]
    rec = record(upto)
    assert len(rec.steps) == 1
    said = texts(frame_at(rec, 0, 0, w=2400, h=1400))
    assert "from step 2 on, in all-reduce order: not run yet" in said
    assert raw_layout(events, 0)[0] in said
    assert not [t for t in said if t.startswith("b1 ")]
