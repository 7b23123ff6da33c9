"""The restart scene's second phase: the four ways of resuming against the run never stopped.

A row per way: each rank's final weights against the run never stopped (= bit for bit, ≠
not), and the largest difference over the ranks; under them what the first resumed step did
differently, as the last rank saw it (its rows, its dropout mask, Adam's step).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddp_viz.kinds.resuming.record import (
    bit_equal,
    first_step_alike,
    masks_differing,
    same_rows,
    variant_equal,
)
from ddp_viz.kinds.resuming.spec import VARIANTS

if TYPE_CHECKING:
    from ddp_viz.kinds.resuming.scene import Builder  # which imports this module
    from ddp_viz.model.frame import Rect

SHORT = {
    "everything": "everything",
    "no_epoch": "no epoch",
    "no_rng": "no RNG",
    "no_optimizer": "no optimizer",
}


def rows_text(rows: list[int]) -> str:
    return ", ".join(map(str, rows))


def everything_note(b: Builder) -> list[tuple[list[str], str, str, float | None]]:
    """Why a resume of everything is not bit-equal: its first step matched (rows, masks,
    Adam's step) and a new DDP's first bucket holds the values in another order."""
    p, t = b.part, b.t
    out: list[tuple[list[str], str, str, float | None]] = []
    if not variant_equal(p, "everything"):
        alike = first_step_alike(p, "everything")
        texts = [
            "everything: first step alike (rows, masks, Adam's step); a new DDP's first "
            "bucket is in another order, so the ring rounds otherwise",
            "everything: first step alike; a new DDP's bucket order moves the last bits",
            "everything: first step alike; DDP's bucket order",
        ]
        out.append(
            (
                texts if alike else ["everything: the first resumed step differs"],
                t.muted,
                "why.everything",
                None,
            )
        )
    return out


def evidence(b: Builder) -> list[tuple[list[str], str, str, float | None]]:
    """What the first resumed step did differently, as the last rank saw it: (texts, ink,
    key, value). A resume of everything that is not bit-equal comes first: its rows, masks
    and Adam's step matched, and a new DDP's first bucket holds the values in another order,
    which a ring of 3 or more ranks adds in another order (lesson.md)."""
    p, t, last = b.part, b.t, b.world - 1
    out: list[tuple[list[str], str, str, float | None]] = []
    out += everything_note(b)
    e = p.compared[("no_epoch", last)]
    again = " (step 1's again)" if e.rows == e.rows_start else ""
    same = same_rows(p, "no_epoch")
    out.append(
        (
            [
                f"no epoch: rank {last}'s first rows {rows_text(e.rows)}{again}, "
                f"never stopped {rows_text(e.rows_want)}",
                f"no epoch: rank {last} rows {rows_text(e.rows)}{again}",
                f"no epoch: {'same' if same else 'other'} rows",
            ],
            t.muted if same else t.bad,
            "rows",
            None,
        )
    )
    n = masks_differing(p, "no_rng")
    size = sum(x.mask_size for (v, _), x in p.compared.items() if v == "no_rng")
    out.append(
        (
            [
                f"no RNG: {n} of {size} dropout-mask places differ in the first resumed step",
                f"no RNG: {n} of {size} mask places differ",
            ],
            t.bad if n else t.muted,
            "masks",
            float(n),
        )
    )
    e = p.compared[("no_optimizer", last)]
    out.append(
        (
            [
                f"no optimizer: Adam's step {e.adam_step:g} after the first resumed step, "
                f"never stopped {e.adam_step_want:g}",
                f"no optimizer: Adam's step {e.adam_step:g}, not {e.adam_step_want:g}",
            ],
            t.bad if e.adam_step != e.adam_step_want else t.muted,
            "adam",
            e.adam_step,
        )
    )
    return out


def draw_resume(b: Builder, area: Rect) -> None:
    p, f, t = b.part, b.small, b.t
    label_w = max(b.width(x, f) for x in SHORT.values()) + f.px * 0.8
    cell = max(b.width("≠", f), b.width(str(b.world - 1), f)) + f.px * 0.6
    result_x = area.x + label_w + b.world * cell + f.px * 0.4
    y = area.y
    head = b.fit(
        ["final weights vs never stopped", "vs never stopped", "result"], f, area.right - result_x
    )
    for rank in range(b.world):
        x = area.x + label_w + rank * cell
        b.text(x, y, str(rank), f, t.rank_color(rank), key=f"head.{rank}")
    b.text(result_x, y, head, f, t.muted)
    b.text(area.x, y, "rank", f, t.muted)
    y += b.lh
    for variant in VARIANTS:
        b.text(area.x, y, SHORT[variant], f, t.text)
        events = [p.compared[(variant, r)] for r in range(b.world) if (variant, r) in p.compared]
        for e in events:
            ok = bit_equal(e)
            b.text(
                area.x + label_w + e.rank * cell,
                y,
                "=" if ok else "≠",
                f,
                t.ok if ok else t.bad,
                key=f"cell.{variant}.{e.rank}",
            )
        ok = variant_equal(p, variant)
        worst = max((e.max_diff for e in events), default=0.0)
        texts = (
            ["✓ bit for bit", "✓ equal", "✓"]
            if ok
            else [f"✗ largest |Δ| {worst:.1e}", f"✗ |Δ| {worst:.1e}", "✗"]
        )
        b.text(
            result_x,
            y,
            b.fit(texts, f, area.right - result_x),
            f,
            t.ok if ok else t.bad,
            key=f"variant.{variant}",
        )
        y += b.lh
    y += b.pad * 0.3
    for texts, ink, key, value in evidence(b):
        y = b.say(area, y, texts, ink, key=key, value=value)
