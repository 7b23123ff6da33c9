"""The evaluation scene: one phase for each part of the lesson, every number from the run.

1. shares: one lane per rank, a cell per place its ``DistributedSampler`` yielded (the row's
   number; green when the rank's prediction was right, red when wrong); the places the
   sampler added are outlined, and the rows held twice named underneath;
2. accuracy: the four ways the ranks computed, each against the one-process float64
   reference, with the reason a way differs;
3. rank 0 only: where each rank waited while rank 0 evaluated alone through the wrapper (its
   heartbeats), gloo's words when the timeout ended it, then the ``model.module`` attempt;
4. seeds: the first step's dropout masks on every rank, with one seed and with seed + rank.
"""

from __future__ import annotations

from ddp_viz.kinds.evaluation.record import (
    EvalRecord,
    extra_rows,
    kept_sizes,
    reference_accuracy,
    repeated,
    ways,
)
from ddp_viz.kinds.evaluation.scene_parts import draw_masks, draw_waits
from ddp_viz.kinds.evaluation.spec import KIND, EvalSpec
from ddp_viz.model.frame import Font, Rect, StageFrame, wrap_lines
from ddp_viz.model.scenes.base import LINE, FrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import PHASES, Cursor, RunRecord

TITLES = (
    "who evaluates which rows",
    "four accuracies, one reference",
    "rank 0 evaluates alone",
    "dropout masks of step 1",
)
WHY = {
    "rank0": "{mine} of {places} places: a sample of the rows",
    "mean": "shares of {sizes} rows weigh alike, so a row on a short share weighs more",
    "padded": "{twice} counted twice: {places} answers for {rows} rows",
    "kept": "every row once, each right answer once: the reference's sum",
}


class Builder(FrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, ctx: SceneContext) -> None:
        super().__init__(ctx)
        self.rec, self.phase = rec, cursor.phase
        self.part: EvalRecord = rec.parts.get(KIND) or EvalRecord()
        self.spec = EvalSpec.from_mapping(rec.scenario.get(KIND, {}))
        self.world = rec.world_size
        self.small = Font(max(ctx.min_px, self.base * 0.9))
        self.lh = self.small.px * LINE

    def build(self) -> StageFrame:
        right = f"{self.world} ranks · {self.spec.eval_rows} held-out rows"
        lines = self.title(
            TITLES[self.phase].capitalize(), [right, f"{self.world} ranks"], self.t.muted
        )
        lines += self.caption(PHASES[self.phase], False, 2)
        y = self.pad * 0.6
        for line in lines:
            self.emit(line, y)
            y += line.height
        area = Rect(self.pad, y + self.pad * 0.4, self.ctx.width - 2 * self.pad, 0)
        area = Rect(area.x, area.y, area.w, self.ctx.height - area.y - self.pad * 0.5)
        [self.shares, self.accuracy, self.rank0_only, self.seeds][self.phase](area)
        return self.frame

    def note(self, area: Rect, y: float, text: str, color: str, key: str = "", **kw) -> float:
        """A wrapped paragraph from ``y`` while it fits in ``area``; the ``y`` after it."""
        for line in wrap_lines(text, self.small, area.w, self.width):
            if y + self.lh > area.bottom:
                break
            self.text(area.x, y, line, self.small, color, key=key, **kw)
            key, kw = "", {}  # the key and value go with the first line
            y += self.lh
        return y

    def waiting(self, area: Rect) -> bool:
        if self.part.evaluated(self.world):
            return False
        self.text(area.x, area.y, "Waiting for the ranks to evaluate…", self.small, self.t.muted)
        return True

    # --- 1. shares ----------------------------------------------------------------------------
    def shares(self, area: Rect) -> None:
        p, f, t = self.part, self.small, self.t
        if self.waiting(area):
            return
        twice = set(repeated(p))
        label_w = self.width(f"rank {self.world - 1}", f) + f.px * 0.6
        places = max(len(s.indices) for s in p.shares.values())
        digits = len(str(max(self.spec.eval_rows - 1, 0)))
        cell = max(f.px * 0.9, min(self.width("8" * digits, f) + f.px * 0.5, f.px * 2.2))
        fits = int((area.w - label_w) // cell)
        lane_h = min(self.lh * 1.15, (area.h - 2.5 * self.lh) / max(1, self.world))
        numbers = lane_h >= f.px * 1.15 and self.width("8" * digits, f) <= cell - 2
        y = area.y
        for rank in range(self.world):
            share = p.shares.get(rank)
            self.text(
                area.x, y + (lane_h - f.px * self.line) / 2, f"rank {rank}", f, t.rank_color(rank)
            )
            for i, row in enumerate(share.indices[:fits] if share else []):
                box = Rect(area.x + label_w + i * cell, y + 1, cell - 2, lane_h - 2)
                ink = t.ok if share.correct[i] else t.bad
                self.shape(
                    kind="rect", box=box, fill=ink, fill_alpha=60 if row not in twice else 130
                )
                if share.padding[i]:
                    self.shape(kind="rect", box=box, stroke=t.text, width=2.5)
                if numbers:
                    bold = Font(f.px, bold=row in twice)
                    x = box.x + (box.w - self.width(str(row), bold)) / 2
                    self.text(x, box.y + (box.h - f.px * self.line) / 2, str(row), bold, t.text)
            y += lane_h
        self.shares_notes(Rect(area.x, y + self.pad * 0.3, area.w, area.bottom - y), places, fits)

    def shares_notes(self, area: Rect, places: int, fits: int) -> None:
        p, t = self.part, self.t
        n, extra = self.spec.eval_rows, extra_rows(p)
        more = f" (first {fits} of {places} places shown)" if fits < places else ""
        head = f"{n} rows → {n + extra} places: the sampler added {extra}{more}"
        y = self.note(area, area.y, head, t.text, key="extra_rows", value=float(extra))
        rows = repeated(p)
        said = ", ".join(f"row {i} (ranks {' and '.join(map(str, rs))})" for i, rs in rows.items())
        text = f"counted twice: {said}" if rows else "no row is counted twice"
        y = self.note(area, y, text, t.bad if rows else t.ok, key="twice")
        self.note(area, y, "outlined: a place the sampler added · green right, red wrong", t.muted)

    # --- 2. accuracy --------------------------------------------------------------------------
    def accuracy(self, area: Rect) -> None:
        p, f, t = self.part, self.small, self.t
        if self.waiting(area):
            return
        rows = [(w.key, w.label, w.value, w.equal) for w in ways(p)]
        ref = reference_accuracy(p) or 0.0
        rows.append(("reference", "one process, float64, every row", ref, True))
        label_w = max(self.width(r[1], f) for r in rows) + f.px
        value_w = self.width("0.0000", f) + f.px
        if label_w + value_w + self.width("≠ reference", f) > area.w:
            label_w = area.w - value_w - self.width("≠ reference", f)
        y = area.y
        for key, label, value, equal in rows:
            shown = label
            while self.width(shown, f) > label_w - f.px * 0.5 and len(shown) > 4:
                shown = shown[:-2] + "…"
            ink = t.text if key != "reference" else t.accent
            self.text(area.x, y, shown, f, ink)
            self.text(area.x + label_w, y, f"{value:.4f}", f, ink, key=f"acc.{key}", value=value)
            if key != "reference":
                mark, color = ("= reference", t.ok) if equal else ("≠ reference", t.bad)
                self.text(area.x + label_w + value_w, y, mark, f, color, key=f"equal.{key}")
            y += self.lh
        y += self.pad * 0.3
        for w in ways(p):
            chance = "equal here by chance, though " if w.equal and w.key != "kept" else ""
            why = f"{w.label}: {chance}{self.why(w.key)}"
            y = self.note(Rect(area.x, y, area.w, area.bottom - y), y, why, t.muted)

    def why(self, key: str) -> str:
        p = self.part
        mine = p.shares[0]
        rows = list(repeated(p))
        twice = ("rows " if len(rows) > 1 else "row ") + ", ".join(map(str, rows))
        return WHY[key].format(
            mine=len(mine.indices),
            places=sum(len(s.indices) for s in p.shares.values()),
            sizes=", ".join(map(str, kept_sizes(p))),
            twice=twice if rows else "no row",
            rows=self.spec.eval_rows,
        )

    # --- 3. rank 0 only -----------------------------------------------------------------------
    def rank0_only(self, area: Rect) -> None:
        draw_waits(self, area)

    # --- 4. seeds -----------------------------------------------------------------------------
    def seeds(self, area: Rect) -> None:
        draw_masks(self, area)


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """The shares and the rows counted twice; four accuracies against a one-process float64
    one; rank 0 evaluating alone, where each rank waited and gloo's words; the first step's
    dropout masks per seeding."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    return Builder(record, cursor, ctx).build()
