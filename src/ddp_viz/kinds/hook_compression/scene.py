"""The trade-off scene: each hook's bytes, its error and its loss, step by step, from the run.

Top left, one row per variant for the step under the cursor: the bytes a rank handed to
all-reduce (a bar, the default's full width), then the relative error of the averaged
gradient of the wide layer against the exact average, then the loss of the step's rows and
the residual error feedback carries. Top right, PowerSGD's P and Q for that layer beside the
exact average they approximate (a corner of each). Below, the whole run: the loss of every
variant, and the bytes each one sent, step by step; a line marks the step shown.
"""

from __future__ import annotations

from ddp_viz.kinds.hook_compression.model import KIND, SHOWN_LAYER, HooksRecord, spec_of
from ddp_viz.kinds.hook_compression.scene_parts import draw_charts, draw_factors
from ddp_viz.model.frame import Align, Font, Rect, StageFrame, fmt
from ddp_viz.model.scenes.base import LINE, FrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import Cursor, RunRecord

TITLES = ("what each hook sends", "how far from the exact average", "P and Q", "the loss")


def human_bytes(n: float) -> str:
    if n >= 1e6:
        return f"{n / 1e6:.2f} MB"
    if n >= 1e4:
        return f"{n / 1e3:.1f} kB"
    return f"{n:,.0f} B"


class _Builder(FrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, ctx: SceneContext) -> None:
        super().__init__(ctx)
        self.rec, self.cursor, self.phase = rec, cursor, cursor.phase
        self.part: HooksRecord = rec.parts[KIND]
        self.spec = spec_of(rec)
        self.variants = self.spec.variants()
        self.small = Font(max(ctx.min_px, self.base * 0.85))
        self.tight = False  # the table's rows closer and its note left out, for the charts
        self.columns = 4  # the table's columns after the bars (fewer: P and Q beside it)

    def color(self, i: int) -> str:
        return self.t.rank_color(i)

    def build(self) -> StageFrame:
        step, n = self.cursor.step, self.spec.steps
        left = f"Step {step + 1} of {n} · {TITLES[self.phase]}"
        right = f"{self.rec.world_size} ranks · {self.spec.width}×{self.spec.width} layer"
        y = self.pad * 0.6
        lines = self.title(left, [right, f"{self.rec.world_size} ranks"], self.t.muted)
        # three lines: a projector's type takes three for the bytes' sentence (two cut it
        # mid-sentence in a GIF); the caption gives way as a whole below
        caption = self.caption(("shards", "local", "allreduce", "step")[self.phase], False, 3)
        rows_h = self.rows_height()
        # the charts are the lesson's picture: the table's spacing and its note give way
        # before they do (a projector at 1280×800), then the caption, whole (the lesson's
        # text says it too; a sentence cut short read as a whole one)
        for _ in range(2):
            above = y + sum(x.height for x in lines + caption) + self.pad * 1.3
            if self.ctx.height - above >= rows_h + self.pad * 0.5 + self.chart_least():
                break
            if not self.tight:
                self.tight = True
                rows_h = self.rows_height()
            else:
                caption = []
        for line in lines + caption:
            self.emit(line, y)
            y += line.height
        y += self.pad * 0.3
        height = self.ctx.height - y - self.pad
        top_h = max(rows_h, min(height * 0.42, rows_h * 1.6))
        width = self.ctx.width - 2 * self.pad
        # the table takes what its columns need (more than 58% in projector type), P and Q
        # the rest when it is room enough for their blocks
        table_w = min(width, max(width * 0.58, self.table_need())) if width > 700 else width
        if self.phase == 2 and not self.factors_fit(width, table_w):
            # P and Q are this phase's subject: the table keeps the columns shown so far (a
            # projector's type left no room for them at 1280 px, in the window and the GIF)
            self.columns = 2
            table_w = min(width, self.table_need())
        self.table(Rect(self.pad, y, table_w, rows_h))
        low = self.part.low_rank.get((self.shown_variant(), step))
        if self.factors_fit(width, table_w) and self.phase >= 2:
            box = Rect(self.pad * 2 + table_w, y, width - table_w - self.pad, top_h)
            draw_factors(self, box, low)
        charts = Rect(self.pad, y + top_h + self.pad * 0.5, width, height - top_h - self.pad * 0.5)
        if self.phase == 2 and low is not None and not self.factors_fit(width, table_w):
            # no room beside the table (a projector at 1280×800): in their own phase P and Q
            # take the charts' place, which come back with the loss
            draw_factors(self, charts, low)
        elif charts.h > self.chart_least():
            draw_charts(self, charts, step)
        return self.frame

    def factors_fit(self, width: float, table_w: float) -> bool:
        return width - table_w - self.pad >= self.small.px * 14

    def chart_least(self) -> float:
        """The least height the charts are drawn in with their lines (below it they are left
        out): a title, two rows of plot and the step labels (scene_parts._chart)."""
        return self.small.px * LINE * 4.8

    def row_h(self) -> float:
        return self.small.px * LINE * (1.0 if self.tight else 1.15)

    def rows_height(self) -> float:
        """The table's heads, its variants and (unless tight) its note."""
        return (len(self.variants) + (1 if self.tight else 2)) * self.row_h()

    def shown_variant(self) -> str:
        return next((v.id for v in self.variants if v.hook == "powersgd"), "")

    def table_need(self) -> float:
        """The table's width with its shortest bars: labels, bars, bytes, error, loss,
        residual."""
        f = self.small
        label_w = max(self.width(v.label, f) for v in self.variants) + f.px
        texts = ["888.8 kB", "rel. error", "8.88888", "residual"][: self.columns]
        return label_w + f.px * 3 + sum(self.width(x, f) + f.px for x in texts)

    def table(self, area: Rect) -> None:
        f, t = self.small, self.t
        lh = self.row_h()
        step = self.cursor.step
        label_w = max(self.width(v.label, f) for v in self.variants) + f.px
        cols = [("bytes a rank sent", 0), ("rel. error", 1), ("loss", 3), ("residual", 3)]
        samples = ["888.8 kB", "8.8e-88", "8.88888", "88.888"]
        cols, samples = cols[: self.columns], samples[: self.columns]
        # a column is as wide as its widest entry, its heading included, and a gap
        col_w = [
            max(self.width(sample, f), self.width(name, f) if i else 0.0) + f.px
            for i, ((name, _), sample) in enumerate(zip(cols, samples, strict=True))
        ]
        if label_w + f.px * 3 + sum(col_w) > area.w:  # too narrow: the residual goes first
            cols, col_w = cols[:3], col_w[:3]
        bar_w = max(f.px * 3, area.w - label_w - sum(col_w))
        xs = [area.x + label_w, area.x + label_w + bar_w + col_w[0]]
        for w in col_w[1:-1]:
            xs.append(xs[-1] + w)
        if self.width(cols[0][0], f) > bar_w + col_w[0] - f.px * 0.5:
            cols[0] = ("bytes", 0)  # a narrow stage: the short heading
        for (name, phase), x in zip(cols, xs, strict=True):
            if self.phase >= phase:
                self.text(x, area.y, name, f, t.muted)
        full = max(
            (sum(e.sent) for v in self.variants for e in self.part.at(v.id, step).values()),
            default=0,
        )
        y = area.y + lh
        for i, v in enumerate(self.variants):
            ranks = self.part.at(v.id, step)
            self.text(area.x, y, v.label, f, self.color(i))
            e = ranks.get(0)
            if e is None:
                y += lh
                continue
            sent = sum(e.sent)
            w = max(0.0, bar_w - f.px) * sent / full if full else 0.0
            box = Rect(xs[0], y + lh * 0.15, max(1.0, w), lh * 0.6)
            self.shape(kind="rect", box=box, fill=self.color(i), key=f"bar.{v.id}")
            self.text(
                xs[0] + w + f.px * 0.3,
                y,
                human_bytes(sent),
                f,
                t.text,
                key=f"bytes.{v.id}",
                value=float(sent),
            )
            if self.phase >= 1:
                err = e.errors.get(SHOWN_LAYER, 0.0)
                ink = t.ok if err < 1e-3 else (t.text if err < 0.3 else t.bad)
                self.text(xs[1], y, f"{err:.1e}", f, ink, key=f"error.{v.id}", value=err)
            if self.phase >= 3:
                loss = self.part.loss(v.id, step) or 0.0
                self.text(xs[2], y, fmt(loss, 4), f, t.text, key=f"loss.{v.id}", value=loss)
                if v.feedback and len(xs) > 3:
                    self.text(xs[3], y, fmt(e.residual, 3), f, t.muted, key=f"residual.{v.id}")
            y += lh
        if self.phase >= 1 and not self.tight:
            note = f"error of {SHOWN_LAYER} against the float64 average of the ranks' gradients"
            if self.width(note, f) <= area.w and y + lh <= self.ctx.height:
                self.text(area.x, y, note, f, t.muted, Align.LEFT)


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """The comm hooks side by side: their bytes and their loss against DDP's own."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    if KIND not in record.parts:
        b = FrameBuilder(ctx)
        b.text(
            b.pad,
            b.pad,
            "This lesson runs the hooks side by side: press Run.",
            Font(b.base),
            b.t.muted,
        )
        return b.frame
    return _Builder(record, cursor, ctx).build()
