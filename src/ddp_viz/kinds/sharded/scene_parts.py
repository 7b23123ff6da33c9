"""The sharded scene's pictures: the rows each rank owns, a lane of collectives per rank, and
the checks against plain DDP."""

from __future__ import annotations

from typing import Any

from ddp_viz.kinds.sharded.model import GRAD_TOL, PARAM_TOL, WAYS, Way, ring_sent
from ddp_viz.model.frame import Rect

OP_INK = {"all_gather": "accent", "reduce_scatter": "bad", "all_reduce": "ok", "broadcast": "text"}


def human(n: float) -> str:
    if n >= 1e4:
        return f"{n / 1e3:.1f} kB"
    return f"{n:,.0f} B"


def draw_slices(b: Any, area: Rect, step: int) -> None:
    """For ZeRO-1 and FSDP2, one row per rank: each parameter a box, the rows of it whose
    Adam state the rank keeps filled in the rank's colour (ZeRO: whole parameters; FSDP: a
    slice of rows, and the parameter and gradient rows too)."""
    f, lh = b.small, b.lh
    names = [n for n, _ in b.spec.shapes()]
    shapes = dict(b.spec.shapes())
    ways = [Way.ZERO, Way.FSDP]
    gap = f.px
    panel_w = (area.w - gap) / 2
    label_w = b.width("r8", f) + f.px * 0.4
    row_h = min(lh, (area.h - lh * 1.2) / b.world)
    if row_h < 3:
        return
    for k, way in enumerate(ways):
        x0 = area.x + k * (panel_w + gap)
        heads = [f"{way.label}: rows each rank owns", f"{way.label}: owns"]
        head = next((h for h in heads if b.width(h, f) <= panel_w), "")
        if head:
            b.text(x0, area.y, head, f, b.t.text, key=f"slices.{way.value}")
        events = b.part.at(way.value, step)
        box_x = x0 + (label_w if row_h >= lh * 0.95 else 0)
        room = x0 + panel_w - box_x
        total = sum(shapes[n][0] for n in names)
        unit = (room - gap * 0.3 * len(names)) / total
        for rank in range(b.world):
            y = area.y + lh * 1.2 + rank * row_h
            if box_x > x0:
                b.text(x0, y, f"r{rank}", f, b.t.rank_color(rank))
            e = events.get(rank)
            x = box_x
            for name in names:
                d0 = shapes[name][0]
                w = max(2.0, d0 * unit)
                cell = Rect(x, y + row_h * 0.15, w, row_h * 0.7)
                b.shape(kind="rect", box=cell, stroke=b.t.grid, width=1)
                first, rows = e.owned.get(name, [0, 0]) if e is not None else (0, 0)
                if rows:
                    part = Rect(x + w * first / d0, cell.y, w * rows / d0, cell.h)
                    b.shape(kind="rect", box=part, fill=b.t.rank_color(rank), key=f"own.{name}")
                x += w + gap * 0.3
    y = area.y + lh * 1.3 + b.world * row_h
    rows = ", ".join(str(shapes[n][0]) for n in names)
    notes = [
        f"boxes: {', '.join(names)} ({rows} rows)",
        f"boxes: {', '.join(n.replace('.weight', '.w').replace('.bias', '.b') for n in names)}",
    ]
    note = next((x for x in notes if b.width(x, f) <= area.w), "")
    if note and y + lh <= area.bottom:
        b.text(area.x, y, note, f, b.t.muted, key="slices.note")


def draw_lanes(b: Any, area: Rect, step: int) -> None:
    """A lane per rank for the way with the most collectives in this phase: each one where
    it started and ended in the step, in its op's colour, revealed in issue order."""
    f, lh, t = b.small, b.lh, b.t
    phase = ("holds", "forward", "backward", "step")[b.phase]
    best, calls = Way.FSDP, {}
    for way in WAYS:
        mine = {
            r: [c for c in b.part.calls(way.value, step, r) if c.phase == phase]
            for r in range(b.world)
        }
        if sum(len(v) for v in mine.values()) > sum(len(v) for v in calls.values()):
            best, calls = way, mine
    if not any(calls.values()):
        return
    heads = [f"{best.label}, every rank: when each collective ran", best.label]
    head = next((h for h in heads if b.width(h, f) <= area.w), "")
    if head:
        b.text(area.x, area.y, head, f, t.muted, key="lanes.title")
        legend(b, area, b.width(head, f) + f.px, sorted({c.op for v in calls.values() for c in v}))
    lane_h = min(lh * 1.5, (area.h - lh * 1.2) / b.world)
    if lane_h < 3:
        return
    label_w = b.width("r8", f) + f.px * 0.4 if lane_h >= lh * 0.95 else 0.0
    starts = [c.start for v in calls.values() for c in v]
    ends = [c.end for v in calls.values() for c in v]
    t0, t1 = min(starts), max(ends)
    span = max(t1 - t0, 1e-6)
    x0, width = area.x + label_w, area.w - label_w - b.width("888.8 ms", f)
    for rank, mine in calls.items():
        y = area.y + lh * 1.2 + rank * lane_h
        if label_w:
            b.text(area.x, y, f"r{rank}", f, t.rank_color(rank))
        b.shape(
            kind="line", points=((x0, y + lane_h / 2), (x0 + width, y + lane_h / 2)), stroke=t.grid
        )
        shown = mine[: round(b.progress * len(mine) + 0.499)]
        for c in shown:
            left = x0 + width * (c.start - t0) / span
            w = max(2.0, width * (c.end - c.start) / span)
            ink = getattr(t, OP_INK[c.op])
            box = Rect(left, y + lane_h * 0.15, w, lane_h * 0.7)
            b.shape(kind="rect", box=box, fill=ink, key=f"lane.{rank}.{c.seq}")
    if label_w:
        b.text(x0 + width + f.px * 0.3, area.y + lh * 1.2, f"{t1 * 1e3:.1f} ms", f, t.muted)


def legend(b: Any, area: Rect, used: float, ops: list[str]) -> None:
    """The ops' colours, right of the lanes' title, when they fit."""
    f = b.small
    words = [op.replace("_", "-") for op in ops]
    need = sum(b.width(w, f) + f.px for w in words)
    if used + need > area.w:
        return
    x = area.right - need
    for op, word in zip(ops, words, strict=True):
        b.text(x, area.y, word, f, getattr(b.t, OP_INK[op]), key=f"legend.{op}")
        x += b.width(word, f) + f.px


def draw_checks(b: Any, area: Rect, step: int) -> float:
    """After the step: ZeRO's and FSDP's full parameters against DDP's, FSDP's gradient rows
    against DDP's averaged gradient, and the ring's bytes of a reduce-scatter + all-gather."""
    f, lh, t = b.small, b.lh, b.t
    lines = []
    for way in (Way.ZERO, Way.FSDP):
        events = b.part.at(way.value, step).values()
        p = max((e.param_diff for e in events), default=0.0)
        g = max((e.grad_diff for e in events), default=0.0)
        ok = p <= PARAM_TOL and g <= GRAD_TOL
        mark = "✓" if ok else "✗"
        texts = [
            f"{mark} {way.label}: params within {p:.0e} of DDP's, grads within {g:.0e}",
            f"{mark} {way.label} = DDP ({max(p, g):.0e})",
        ]
        lines.append((texts, t.ok if ok else t.bad, f"check.{way.value}"))
    layer = b.part.calls(Way.FSDP.value, step, b.rank)
    big = max((c.bytes_out for c in layer if c.op == "all_gather"), default=0)
    if big:
        half = ring_sent("all_gather", big, b.world)
        lines.append(
            (
                [
                    f"ring: RS + AG of {human(big)} send {human(2 * half)} a rank: an all-reduce",
                    f"RS + AG = 1 ring all-reduce: {human(2 * half)}",
                ],
                t.muted,
                "check.ring",
            )
        )
    y = area.y
    for texts, ink, key in lines:
        text = next((x for x in texts if b.width(x, f) <= area.w), "")
        if text and y + lh <= area.bottom:
            b.text(area.x, y, text, f, ink, key=key)
            y += lh
    return y - area.y + lh * 0.2
