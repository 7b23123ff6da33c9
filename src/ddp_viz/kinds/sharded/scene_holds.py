"""The sharded scene's first phase, what each rank holds: the bytes one rank held after the
step for each way against the formula (which the table spells out), and the rows of every
parameter each rank owns, ZeRO-1's whole parameters and FSDP2's row slices."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddp_viz.kinds.sharded.model import WAYS, WHAT, Way, expected_bytes
from ddp_viz.kinds.sharded.scene_lanes import human
from ddp_viz.model.frame import Font, Rect

if TYPE_CHECKING:
    from ddp_viz.kinds.sharded.scene import ShardedBuilder

FORMULAS = {  # what the bytes are checked against, longest first (torch 2.13's own rules)
    Way.DDP: (
        "all of it on every rank: params, grads, 2 Adam tensors",
        "all of it on every rank",
        "all on every rank",
        "all of it",
    ),
    Way.ZERO: (
        "Adam state split by whole parameters, largest first",
        "Adam state by whole parameters",
        "state by whole params",
        "by whole params",
    ),
    Way.FSDP: (
        "params, grads and Adam state split by rows (dim 0)",
        "all three split by rows",
        "all split by rows",
        "by rows",
    ),
}


def held_table(b: ShardedBuilder, area: Rect, step: int) -> float:
    """Bytes rank ``b.rank`` held for each way, and the formula they match; its height."""
    f, t, lh = b.body, b.t, b.body_lh
    heads = ["params", "grads", "Adam state"]
    for _ in range(2):  # a stage narrower than its columns (520 px in projector type): smaller
        label_w = max(b.width(w.label, f) for w in WAYS) + f.px
        sample = b.width("88.8 kB", f) + f.px
        cols = [max(sample, b.width(h, f) + f.px) for h in heads]
        mark = b.width("✓", f)  # the verdict keeps its room beside the numbers
        if label_w + sum(cols) + mark <= area.w:
            break
        f = Font(f.px * area.w / (label_w + sum(cols) + mark) * 0.98)
    x_formula = area.x + label_w + sum(cols)
    room = area.right - x_formula
    level = next(
        (i for i in range(4) if all(b.width(f"✓ {FORMULAS[w][i]}", f) <= room for w in WAYS)),
        None,
    )
    if room >= b.width("formula", f):
        heads = [*heads, "bytes match the formula" if level == 0 else "formula"]
    b.text(area.x, area.y, f"rank {b.rank}", f, t.muted, key="held.rank")
    x = area.x + label_w
    for head, w in zip(heads, [*cols, room], strict=False):
        if b.width(head, f) <= area.right - x:
            b.text(x, area.y, head, f, t.muted)
        x += w
    y = area.y + lh
    for i, way in enumerate(WAYS):
        e = b.part.at(way.value, step).get(b.rank)
        b.text(area.x, y, way.label, f, t.rank_color(i) if i else t.text)
        if e is not None:
            want = expected_bytes(b.spec, way, b.world, b.rank)
            x = area.x + label_w
            for what, w in zip(WHAT, cols, strict=True):
                got = getattr(e, what)
                key = f"held.{way.value}.{what}"
                b.text(x, y, human(got), f, t.text, key=key, value=float(got))
                x += w
            same = all(getattr(e, k) == want[k] for k in WHAT)
            mark = "✓" if same else "✗"
            text = mark if level is None else f"{mark} {FORMULAS[way][level]}"
            if b.width(text, f) <= room:
                b.text(x, y, text, f, t.ok if same else t.bad, key=f"formula.{way.value}")
        y += lh
    return y - area.y + gathered_line(b, area, y, step) + lh * 0.3


def gathered_line(b: ShardedBuilder, area: Rect, y: float, step: int) -> float:
    """FSDP2's peak of whole layers held beside its shards, when it fits; its height."""
    f = b.small
    fsdp = b.part.at(Way.FSDP.value, step).get(b.rank)
    if fsdp is None or not fsdp.gathered or b.lean:
        return 0.0
    g = human(fsdp.gathered)
    texts = [
        f"FSDP2 also held up to {g} of whole layers ({fsdp.gathered_at})",
        f"FSDP2 also held {g} of whole layers",
        f"+ {g} gathered",
    ]
    text = next((x for x in texts if b.width(x, f) <= area.w), "")
    if not text:
        return 0.0
    b.text(area.x, y, text, f, b.t.muted, key="held.fsdp.gathered")
    return b.lh


def draw_slices(b: ShardedBuilder, area: Rect, step: int) -> None:
    """For ZeRO-1 and FSDP2, one row per rank: each parameter a box, the rows of it whose
    Adam state the rank keeps filled in the rank's colour (ZeRO: whole parameters; FSDP: a
    slice of rows, and the parameter and gradient rows too)."""
    f, lh = b.body, b.body_lh
    names = [n for n, _ in b.spec.shapes()]
    fonts = [f, b.small, Font(b.ctx.min_px)]  # the rank labels' type, largest that fits
    floor = fonts[-1].px * b.line
    note_h = b.lh * 1.1
    row_h = min(lh * 3.0, (area.h - lh * 1.2 - note_h) / b.world)
    if row_h < floor <= (area.h - lh * 1.2) / b.world:  # the note gives way to the labels
        note_h, row_h = 0.0, floor
    if row_h < 3:
        return
    label_f = next((x for x in fonts if row_h >= x.px * b.line), fonts[-1])
    labels = row_h >= label_f.px * b.line
    gap = f.px
    panel_w = (area.w - gap) / 2
    for k, way in enumerate((Way.ZERO, Way.FSDP)):
        panel = Rect(area.x + k * (panel_w + gap), area.y, panel_w, area.h)
        heads = [f"{way.label}: rows each rank owns", f"{way.label}: owns", way.label]
        head = next((h for h in heads if b.width(h, f) <= panel_w), "")
        if head:
            b.text(panel.x, area.y, head, f, b.t.text, key=f"slices.{way.value}")
        label_w = b.width("r8", label_f) + label_f.px * 0.4 if labels else 0.0
        for rank in range(b.world):
            y = area.y + lh * 1.2 + rank * row_h
            if labels:
                ty = y + (row_h - label_f.px * b.line) / 2
                key = f"slices.r{rank}" if k == 0 else ""
                b.text(panel.x, ty, f"r{rank}", label_f, b.t.rank_color(rank), key=key)
            row = Rect(panel.x + label_w, y, panel.w - label_w, row_h)
            slice_row(b, row, way, rank, step, names)
    y = area.y + lh * 1.2 + b.world * row_h + b.lh * 0.1
    shapes = dict(b.spec.shapes())
    rows = ", ".join(str(shapes[n][0]) for n in names)
    short = ", ".join(n.replace(".weight", ".w").replace(".bias", ".b") for n in names)
    notes = [f"boxes: {', '.join(names)} ({rows} rows)", f"boxes: {short}"]
    note = next((x for x in notes if b.width(x, b.small) <= area.w), "")
    if note and note_h and y + b.text_h <= area.bottom:
        b.text(area.x, y, note, b.small, b.t.muted, key="slices.note")


def slice_row(
    b: ShardedBuilder, row: Rect, way: Way, rank: int, step: int, names: list[str]
) -> None:
    """One rank's boxes, one a parameter, as wide as its rows; what it owns filled."""
    shapes = dict(b.spec.shapes())
    gap = b.body.px * 0.3
    unit = (row.w - gap * len(names)) / sum(shapes[n][0] for n in names)
    e = b.part.at(way.value, step).get(rank)
    x = row.x
    for name in names:
        d0 = shapes[name][0]
        w = max(2.0, d0 * unit)
        cell = Rect(x, row.y + row.h * 0.15, w, row.h * 0.7)
        b.shape(kind="rect", box=cell, stroke=b.t.grid, width=1)
        first, rows = e.owned.get(name, [0, 0]) if e is not None else (0, 0)
        if rows:
            part = Rect(x + w * first / d0, cell.y, w * rows / d0, cell.h)
            b.shape(kind="rect", box=part, fill=b.t.rank_color(rank), key=f"own.{name}")
        x += w + gap
