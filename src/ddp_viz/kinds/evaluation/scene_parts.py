"""The evaluation scene's last two phases: where each rank waited while rank 0 evaluated
alone (its heartbeats and gloo's words), and the first step's dropout masks per seeding."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ddp_viz.kinds.evaluation.record import (
    EQUAL,
    mask_agreement,
    module_done,
    reference_accuracy,
)
from ddp_viz.model.frame import Font, Rect
from ddp_viz.model.tensors import close

if TYPE_CHECKING:
    from ddp_viz.kinds.evaluation.scene import Builder  # which imports this module

SOURCE = re.compile(r"^\[[^\]]*\]\s*")  # gloo's "[…/unbound_buffer.cc:129] " before its words


def function(where: list[str], short: bool) -> str:
    """The innermost frame's function: ``DistributedDataParallel._distributed_broadcast_…``
    (``short``: without its class)."""
    name = where[0].split(" (")[0] if where else "?"
    return name.rsplit(".", 1)[-1] if short else name


def rank_line(b: Builder, rank: int, short: bool) -> tuple[str, float | None]:
    """What rank ``rank`` did in the attempt through the wrapper, and for how long."""
    p = b.part
    done, beat = p.outcomes.get(("wrapper", rank)), p.waits.get(("wrapper", rank))
    where = function(beat.where, short) if beat else ""
    if done is not None and done.error:
        return f"{done.what}: waited {done.seconds:.2f} s in {where or done.what}", done.seconds
    if done is not None:
        return f"{done.what}: done in {done.seconds:.3f} s", done.seconds
    if beat is not None:
        return f"waiting in {where} for {beat.now - beat.since:.2f} s", beat.now - beat.since
    return "…", None


def draw_lines(b: Builder, area: Rect, y: float, texts: list[tuple[str, str, str, Any]]) -> float:
    """Lines of (text, colour, key, value), each wrapped; stops at the area's bottom."""
    for text, color, key, value in texts:
        y = b.note(Rect(area.x, y, area.w, area.bottom - y), y, text, color, key=key, value=value)
    return y


def draw_waits(b: Builder, area: Rect) -> None:
    f, t = b.small, b.t
    bold = Font(f.px, bold=True)
    y = area.y
    if b.spec.hang:
        timeout = f"timeout {b.spec.timeout_s:g} s"
        head = f"rank 0: model(x) through DDP · others: dist.barrier() · {timeout}"
        if b.width(head, bold) > area.w:
            head = "rank 0: model(x) · others: barrier()"
        b.text(area.x, y, head, bold, t.text)
        y += b.lh
        label_w = b.width(f"rank {b.world - 1}", f) + f.px * 0.6
        for rank in range(b.world):
            text, seconds = rank_line(b, rank, short=False)
            if b.width(text, f) > area.w - label_w:
                text, seconds = rank_line(b, rank, short=True)
            while b.width(text, f) > area.w - label_w and len(text) > 4:
                text = text[:-2] + "…"
            b.text(area.x, y, f"rank {rank}", f, t.rank_color(rank))
            b.text(area.x + label_w, y, text, f, t.text, key=f"wait.{rank}", value=seconds)
            y += b.lh
        y = draw_lines(b, area, y, [*stack_line(b), *error_lines(b)])
    else:
        b.text(area.x, y, "This run skips rank 0 alone through DDP (hang = false).", f, t.muted)
        y += b.lh
    y += b.pad * 0.3
    if y + 2 * b.lh > area.bottom:
        return
    b.text(area.x, y, "rank 0: model.module(x) · others: dist.barrier()", bold, t.text)
    y += b.lh
    draw_lines(b, area, y, [module_line(b)])


def error_lines(b: Builder) -> list[tuple[str, str, str, Any]]:
    """gloo's distinct messages, each with the ranks that got it; a rank whose own timeout
    fired first closes its connections, so a peer may get that instead of a timeout."""
    by_error: dict[str, list[int]] = {}
    for (attempt, rank), o in sorted(b.part.outcomes.items()):
        if attempt == "wrapper" and o.error:
            by_error.setdefault(SOURCE.sub("", o.error), []).append(rank)
    out = [
        (f"gloo, ranks {', '.join(map(str, ranks))}: {error}", b.t.bad, f"error.{ranks[0]}", None)
        for error, ranks in by_error.items()
    ]
    if any(w in e.lower() for e in by_error for w in ("closed by peer", "pair closure")):
        note = "(a closed connection: a peer's own timeout fired first and closed it)"
        out.append((note, b.t.muted, "", None))
    return out


def stack_line(b: Builder) -> list[tuple[str, str, str, Any]]:
    """Rank 0's latest heartbeat: the frames it waits in, outermost first."""
    beat = b.part.waits.get(("wrapper", 0))
    if beat is None or len(beat.where) < 2:
        return []
    names = [function([w], short=True) for w in reversed(beat.where)]
    return [(f"rank 0's stack: {' → '.join(names)}", b.t.muted, "stack.0", None)]


def module_line(b: Builder) -> tuple[str, str, str, Any]:
    p = b.part
    if not module_done(p, b.world):
        return ("…", b.t.muted, "", None)
    o = p.outcomes[("module", 0)]
    # the check both ways: a line that only falls silent when it fails reads as a pass
    ref = reference_accuracy(p)  # 0.0 when no row was right: still a reference
    same = ref is not None and close(o.accuracy, ref, EQUAL)
    said = "= one process" if same else "≠ one process"
    text = (
        f"completed: rank 0 took {o.seconds:.3f} s, accuracy {o.accuracy:.4f} on every row {said}"
    )
    return (text, b.t.ok if same else b.t.bad, "module.accuracy", o.accuracy)


def draw_masks(b: Builder, area: Rect) -> None:
    p, f, t = b.part, b.small, b.t
    bands = [
        ("same", f"manual_seed({b.spec.seed}) on every rank"),
        ("seed_plus_rank", "manual_seed(seed + rank)"),
    ]
    first = p.masks.get(("same", 0))
    if first is None:
        b.text(area.x, area.y, "Waiting for the first step's masks…", f, t.muted)
        return
    rows, cols = len(first.mask), len(first.mask[0]) if first.mask else 0
    footer = 3 * b.lh + b.pad * 0.8  # the legend and the weights line
    band_h = (area.h - footer) / 2
    gap = f.px * 0.8
    cell = min(
        (area.w - gap * (b.world - 1)) / (b.world * max(1, cols)),
        (band_h - 2 * b.lh) / max(1, rows),
    )
    shown_rows = rows
    if cell < 3:  # a short stage: fewer rows of each mask, cells still visible
        cell = min((area.w - gap * (b.world - 1)) / (b.world * max(1, cols)), 6.0)
        shown_rows = max(1, int((band_h - 2 * b.lh) // max(cell, 1)))
    y = area.y
    for seeding, words in bands:
        agree = mask_agreement(p, seeding)
        same = ", ".join(f"{a:.0%}" for r, a in agree.items() if r)
        head = f"{words}: places equal to rank 0's mask: {same}"
        y = b.note(Rect(area.x, y, area.w, b.lh * 2), y, head, t.text, key=f"agree.{seeding}")
        block_y = y + b.lh
        for rank in range(b.world):
            x = area.x + rank * (cols * cell + gap)
            label = f"rank {rank}" if b.width(f"rank {rank}", f) <= cols * cell else str(rank)
            if b.width(label, f) <= cols * cell + gap * 0.5:
                b.text(x, y, label, f, t.rank_color(rank))
            m = p.masks.get((seeding, rank))
            if m is not None:
                mask_block(b, x, block_y, cell, m.mask[:shown_rows], t.rank_color(rank))
        y = block_y + shown_rows * cell + b.pad * 0.4
    crcs = sorted({m.weights for m in p.masks.values() if m.seeding == "seed_plus_rank"})
    if crcs:
        words = (
            "the same CRC-32 on every rank" if len(crcs) == 1 else f"{len(crcs)} different CRC-32s"
        )
        legend = "filled: a unit kept · empty: dropped"
        if b.width(legend, f) <= area.w:
            y = b.note(Rect(area.x, y, area.w, area.bottom - y), y, legend, t.muted)
        text = f"weights after step 1 with seed + rank: {words} (DDP copied rank 0's at wrap time)"
        b.note(
            Rect(area.x, y, area.w, area.bottom - y),
            y,
            text,
            t.ok if len(crcs) == 1 else t.bad,
            key="weights",
        )


def mask_block(
    b: Builder, x: float, y: float, cell: float, mask: list[list[int]], ink: str
) -> None:
    """One rank's mask: a filled cell for a unit kept, an empty one for a unit dropped."""
    for i, row in enumerate(mask):
        for j, kept in enumerate(row):
            if kept:
                b.shape(
                    kind="rect",
                    box=Rect(x + j * cell, y + i * cell, cell, cell),
                    fill=ink,
                    fill_alpha=200,
                )
    w, h = cell * (len(mask[0]) if mask else 0), cell * len(mask)
    b.shape(kind="rect", box=Rect(x, y, w, h), stroke=b.t.muted, width=1)
