"""The pictures of the buckets scene: the per-rank timeline, the layouts and the norms.

Positions only: :mod:`ddp_viz.kinds.bucket_timeline.scene` decides how much room each part gets.
"""

from __future__ import annotations

from typing import Any

from ddp_viz.kinds.bucket_timeline.overlap import Overlap, layouts, overlap
from ddp_viz.kinds.bucket_timeline.scene_norms import NormsPanel
from ddp_viz.kinds.bucket_timeline.scene_parts import axis_ticks, bucket_of, size_label
from ddp_viz.model.frame import Font, Rect, wrap_lines
from ddp_viz.model.scenes.base import LINE, short_name
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import Cursor, RunRecord, StepRecord

AXIS_ROWS = 1.6  # the time axis and its labels, in rows
LEGEND_LINES = 2  # at most; the rest is cut with an ellipsis
DENSE_ROW = 1.1  # a rank's row and the gap under it, in rows, when each rank takes one row
DENSE_AXIS_ROWS = 1.3  # the axis under rows as tall as their labels


# the layouts' headings, longest words first: step 1's order, then the rebuilt one
LAYOUT_HEADS = (
    ("rank 0's buckets in step 1", "buckets in step 1", "step 1"),
    (
        "from step 2 on, in all-reduce order",
        "step 2 on, in all-reduce order",
        "step 2 on: all-reduce order",
        "step 2 on",
    ),
)


class Panels(NormsPanel):
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(ctx)
        self.rec, self.cursor = rec, cursor
        self.phase = cursor.phase
        self.progress = min(1.0, max(0.0, progress))
        self.step: StepRecord | None = (
            rec.steps[cursor.step] if cursor.step < len(rec.steps) else None
        )
        self.small = Font(max(ctx.min_px, self.base * 0.85))
        self.names = [p.name for p in rec.params]
        self.layouts = layouts(rec)
        self.compact = False  # each rank's buckets in one lane, when the stage is short
        # shorter still (8 ranks on a projector): a rank in one row, backward and its ticks in
        # the row's upper half and its buckets' bars in the lower, so every rank is drawn
        self.dense = False
        self.row = self.min_row()

    # --- the timeline ------------------------------------------------------------------------
    def min_row(self) -> float:
        """A row no shorter than its label (a dense row holds one label and thin bars)."""
        return self.small.px * (self.line if self.dense else 1.3)

    def buckets_in(self, r: int) -> list[dict[str, Any]]:
        assert self.step is not None
        return sorted(self.step.ranks[r].bucket_spans, key=lambda b: b["index"])

    def timeline_rows(self, ranks: list[int]) -> float:
        """Rows the timeline of ``ranks`` takes below its legend: each rank and its buckets, gaps
        between ranks, the axis."""
        if self.step is None or not ranks:
            return 0.0
        if self.dense:
            return DENSE_ROW * len(ranks) + DENSE_AXIS_ROWS
        body = sum(1 + (1 if self.compact else len(self.buckets_in(r))) for r in ranks)
        return body + 0.3 * len(ranks) + AXIS_ROWS

    def legend(self, ranks: list[int], phase: int) -> str:
        text = "grey: backward · tick: a gradient ready · b0, b1…: a bucket's all-reduce"
        if self.dense:
            text = "upper half: backward (grey), a tick as each gradient is ready · lower: "
            text += "each bucket's all-reduce, b0 at the top"
        elif self.compact:
            text += ", one thin bar each in one lane, b0 at the top"
        if phase == 3:  # what this phase adds first: a short stage cuts the legend's end
            text = "black line: backward's last gradient · dark: hidden · " + text
        hidden = sorted(r for r in (self.step.ranks if self.step else ()) if r not in ranks)
        if hidden:
            who = f"rank {hidden[0]}" if len(hidden) == 1 else f"ranks {hidden[0]}–{hidden[-1]}"
            text = f"{who}: stage too short · " + text
        return text

    def legend_height(self, ranks: list[int]) -> float:
        """As tall as the longest legend (the last phase's), so rows keep their place."""
        return len(self.legend_lines(self.legend(ranks, 3))) * self.small.px * LINE

    def timeline(self, top: float, ranks: list[int]) -> float:
        """Draw it from ``top``; return where it ends."""
        st, t, h = self.step, self.t, self.row
        assert st is not None
        spans: dict[int, Overlap] = {r: o for r in ranks if (o := overlap(st.ranks[r]))}
        t0 = min(o.backward[0] for o in spans.values())
        t1 = max(
            [o.backward[1] for o in spans.values()]
            + [b["finished"] for r in ranks for b in self.buckets_in(r) if b.get("finished")]
        )
        labels = [f"rank {r}" for r in ranks]
        label_w = max(self.width(s, self.small) for s in labels) + self.pad
        left, right = self.pad + label_w, self.ctx.width - self.pad
        span = max(t1 - t0, 1e-9)

        def x_of(at: float) -> float:
            return left + (at - t0) / span * (right - left)

        sweep = t0 + self.progress * span if self.phase in (1, 2) else t1
        for i, line in enumerate(self.legend_lines(self.legend(ranks, self.phase))):
            self.text(self.pad, top + i * self.small.px * LINE, line, self.small, t.muted)
        y = top + self.legend_height(ranks)  # the same place in every phase
        for r in ranks:
            y = self.rank_rows(r, spans[r], y, x_of, sweep)
        self.axis(y, left, right, t0, span, x_of)
        return y + h * (DENSE_AXIS_ROWS if self.dense else AXIS_ROWS)

    def legend_lines(self, legend: str) -> list[str]:
        room = self.ctx.width - 2 * self.pad
        lines = wrap_lines(legend, self.small, room, self.width)
        return (
            lines
            if len(lines) <= LEGEND_LINES
            else [*lines[:1], self.fit(" ".join(lines[1:]), room)]
        )

    def fit(self, text: str, room: float, font: Font | None = None) -> str:
        """The text, cut at a word with an ellipsis when it is wider than ``room``."""
        font = font or self.small
        if self.width(text, font) <= room:
            return text
        lines = wrap_lines(text, font, room - self.width(" …", font), self.width)
        return (lines[0] + " …") if lines else ""

    def rank_rows(self, r: int, o: Overlap, y: float, x_of: Any, sweep: float) -> float:
        t, h = self.t, self.row
        buckets = self.buckets_in(r)
        self.text(
            self.pad, y + (h - self.small.px * self.line) / 2, f"rank {r}", self.small, t.text
        )
        if self.dense:
            return self.dense_row(r, o, y, x_of, sweep)
        self.backward_row(r, o, (y, h), x_of, sweep)
        first_bucket_y = y + h
        y += h
        lanes = [[b] for b in buckets] if not self.compact else [buckets]
        for lane in lanes:
            first, last = lane[0]["index"], lane[-1]["index"]
            self.text(
                self.pad + self.small.px,
                y + (h - self.small.px * self.line) / 2,
                f"b{first}" if first == last else f"b{first}–{last}",
                self.small,
                t.muted,
            )
            for i, b in enumerate(lane):
                self.bucket_bar(r, b, o, y, x_of, sweep, (i, len(lane)))
            y += h
        if self.phase == 3:  # where this rank's backward finished computing
            x = x_of(o.last_ready)
            self.shape(
                kind="line", points=((x, first_bucket_y - h), (x, y)), stroke=t.text, width=2
            )
        return y + h * 0.3

    def backward_row(
        self, r: int, o: Overlap, band: tuple[float, float], x_of: Any, sweep: float
    ) -> None:
        """Rank ``r``'s backward as a grey bar and a tick as each gradient became ready, in
        the band (top, height)."""
        st, t = self.step, self.t
        assert st is not None
        y, h = band
        buckets = self.buckets_in(r)
        b_start, b_end = o.backward
        end = min(b_end, sweep) if self.phase == 1 else b_end
        if self.phase >= 1 and end > b_start:
            box = Rect(x_of(b_start), y + h * 0.3, x_of(end) - x_of(b_start), h * 0.4)
            self.shape(kind="rect", box=box, fill=t.grid, key=f"rank{r}.backward")
        if self.phase < 1:
            return
        for name, at in st.ranks[r].ready:
            if float(at) > sweep:
                continue
            x = x_of(float(at))
            self.shape(
                kind="line",
                points=((x, y + h * 0.08), (x, y + h * 0.92)),
                stroke=t.rank_color(bucket_of(buckets, str(name))),
                width=max(2.0, h * 0.09),
                key=f"rank{r}.ready.{name}",
            )

    def dense_row(self, r: int, o: Overlap, y: float, x_of: Any, sweep: float) -> float:
        """Rank ``r`` in one row: backward in its upper half, the buckets in its lower."""
        h = self.row
        self.backward_row(r, o, (y, h * 0.5), x_of, sweep)
        buckets = self.buckets_in(r)
        for i, b in enumerate(buckets):
            self.bucket_bar(r, b, o, y, x_of, sweep, (i, len(buckets)), (0.5, 0.95))
        if self.phase == 3:  # where this rank's backward finished computing
            x = x_of(o.last_ready)
            self.shape(kind="line", points=((x, y), (x, y + h)), stroke=self.t.text, width=2)
        return y + h * DENSE_ROW

    def bucket_bar(
        self,
        r: int,
        b: dict,
        o: Overlap,
        y: float,
        x_of: Any,
        sweep: float,
        place: tuple,
        band: tuple[float, float] = (0.05, 0.95),
    ) -> None:
        """One bucket's all-reduce as a bar; ``place`` is (its place, bars) in its lane, and
        ``band`` the part of the row the lane takes (from, to, as fractions of it)."""
        t, h = self.t, self.row
        i, n = place
        top, tall = (y + h * 0.2, h * 0.6)
        if n > 1:  # a lane of them: thin bars, the first at the top
            lo, hi = band
            top, tall = y + h * (lo + (hi - lo) * i / n), h * (hi - lo) * 0.9 / n
        color = t.rank_color(int(b["index"]))
        if self.phase < 2 or b.get("finished") is None or b["launched"] > sweep:
            return
        stop = min(b["finished"], sweep) if self.phase == 2 else b["finished"]
        x0 = x_of(b["launched"])
        box = Rect(x0, top, max(2.0, x_of(stop) - x0), tall)
        self.shape(
            kind="rect",
            box=box,
            fill=color,
            fill_alpha=90,
            stroke=color,
            key=f"rank{r}.bucket{b['index']}",
        )
        hidden_end = min(b["finished"], o.last_ready)
        if self.phase == 3 and hidden_end > b["launched"]:
            shade = Rect(x0, box.y, x_of(hidden_end) - x0, box.h)
            self.shape(kind="rect", box=shade, fill=color, key=f"rank{r}.hidden{b['index']}")

    def axis(self, y: float, left: float, right: float, t0: float, span: float, x_of: Any) -> None:
        t = self.t
        self.shape(kind="line", points=((left, y), (right, y)), stroke=t.muted, width=1.0)
        label_w = self.width("00.0 ms", self.small)
        most = max(2, int((right - left) / (label_w * 1.6)))
        last_right = -1e9
        for value_ms, label in axis_ticks(span * 1000, most):
            x = x_of(t0 + value_ms / 1000)
            w = self.width(label, self.small)
            lx = min(max(x - w / 2, left - w / 2), right - w)
            if lx < last_right + self.small.px * 0.5:
                continue
            self.shape(kind="line", points=((x, y), (x, y + 4)), stroke=t.muted, width=1.0)
            self.text(lx, y + 4, label, self.small, t.muted)
            last_right = lx + w

    # --- under the timeline: the layouts and the norms --------------------------------------
    def lower_rows(self) -> int:
        """Rows under the timeline: the layouts (a line per bucket) and the norms (a line per
        tensor) take turns there, so the picture keeps its place from phase to phase."""
        return max(self.lower_min_rows(), len(self.names) + 1)

    def lower_min_rows(self) -> int:
        """What the layouts need: a title and a line per bucket (the norms can be cut)."""
        return max(3, 1 + max((len(layout) for layout in self.layouts), default=1))

    def lower(self, box: Rect) -> None:
        if self.phase == 3:
            self.norms_panel(box)
        else:
            self.layouts_panel(box)

    def layouts_panel(self, box: Rect) -> None:
        """Step 1's bucket layout beside the rebuilt one, a line per bucket."""
        t, f = self.t, self.small
        lh = f.px * LINE
        col_w = (box.w - self.pad) / 2
        for index, labels in enumerate(LAYOUT_HEADS):
            x = box.x + index * (col_w + self.pad)
            current = (self.cursor.step == 0) == (index == 0)
            font = Font(f.px, bold=current)
            color = t.text if current else t.muted
            layout = self.layouts[index] if index < len(self.layouts) else []
            said = [x + ("" if layout else ": not run yet") for x in labels]
            # shorter words before a cut: "from step 2 on, in all-reduce …" (1280×800,
            # projector, Ctrl+L) hid the order the heading is about
            head = next((x for x in said if self.width(x, font) <= col_w), said[-1])
            lines = [self.fit(head, col_w, font)]
            sizes = self.bucket_sizes(index) if layout else []
            for i, names in enumerate(layout):
                size = f"  {size_label(sizes[i])}" if i < len(sizes) else ""
                text = f"b{i}  {' '.join(short_name(n) for n in names)}{size}"
                lines += wrap_lines(text, f, col_w, self.width)
            y = box.y
            for i, line in enumerate(lines):
                if y + lh > box.bottom + 0.5:
                    break
                self.text(x, y, line, font if i == 0 else f, color)
                y += lh

    def bucket_sizes(self, index: int) -> list[int]:
        rs = self.rec.steps[index].ranks.get(0)
        if rs is None:
            return []
        return [int(b["bytes"]) for b in sorted(rs.bucket_spans, key=lambda b: b["index"])]
