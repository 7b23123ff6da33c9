"""The sharded scene's checks after the step: ZeRO's and FSDP's full parameters against plain
DDP's, FSDP's gradient rows against DDP's averaged gradient, and the ring's bytes of a
reduce-scatter + all-gather."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddp_viz.kinds.sharded.model import DDPS, GRAD_TOL, PARAM_TOL, Way, ring_sent, within
from ddp_viz.kinds.sharded.scene_lanes import human
from ddp_viz.model.frame import Rect

if TYPE_CHECKING:
    from ddp_viz.kinds.sharded.scene import ShardedBuilder

Check = tuple[list[str], str, str]  # its texts (longest first), ink, key


def worst(b: ShardedBuilder, step: int, way: Way) -> tuple[float, float]:
    """The largest parameter and gradient difference from DDP over the ranks, after ``step``."""
    events = b.part.at(way.value, step).values()
    return (
        max((e.param_diff for e in events), default=0.0),
        max((e.grad_diff for e in events), default=0.0),
    )


def one_check(b: ShardedBuilder, step: int) -> Check:
    """Both ways' checks in one line, for a stage too short for two."""
    diffs = [worst(b, step, way) for way in (Way.ZERO, Way.FSDP)]
    ok = all(p <= PARAM_TOL and g <= GRAD_TOL for p, g in diffs)
    most = max(max(d) for d in diffs)
    texts = [
        f"{'✓' if ok else '✗'} ZeRO-1 and FSDP2 train DDP's weights ({within(most)})",
        f"{'✓' if ok else '✗'} ZeRO-1, FSDP2 = DDP ({within(most)})",
    ]
    return texts, b.t.ok if ok else b.t.bad, "check.both"


def checks(b: ShardedBuilder, step: int) -> list[Check]:
    """The lines, the ring's last (the first to go when the stage is short)."""
    t = b.t
    lines: list[Check] = []
    for way in (Way.ZERO, Way.FSDP):
        p, g = worst(b, step, way)
        ok = p <= PARAM_TOL and g <= GRAD_TOL
        mark = "✓" if ok else "✗"
        texts = [
            f"{mark} {way.label}: params {within(p, of=DDPS)}, grads {within(g)}",
            f"{mark} {way.label} = DDP ({within(max(p, g))})",
        ]
        lines.append((texts, t.ok if ok else t.bad, f"check.{way.value}"))
    calls = b.part.calls(Way.FSDP.value, step, b.rank)
    big = max((c.bytes_out for c in calls if c.op == "all_gather"), default=0)
    if big:
        half = ring_sent("all_gather", big, b.world)
        texts = [
            f"ring: RS + AG of {human(big)} send {human(2 * half)} a rank: an all-reduce",
            f"RS + AG = 1 ring all-reduce: {human(2 * half)}",
        ]
        lines.append((texts, t.muted, "check.ring"))
    return lines


def draw_checks(b: ShardedBuilder, area: Rect, lines: list[Check]) -> float:
    """``lines``, each in the longest of its texts that fits; their height."""
    f, lh = b.small, b.lh
    y = area.y
    for texts, ink, key in lines:
        text = next((x for x in texts if b.width(x, f) <= area.w), "")
        if text and y + b.text_h <= area.bottom:
            b.text(area.x, y, text, f, ink, key=key)
            y += lh
    return y - area.y + lh * 0.2
