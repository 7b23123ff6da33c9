"""The DDP step scene: shards, local gradients, the all-reduce, the identical optimizer step.

One lane per rank. Columns: who (rank, pid) · shard (rows, loss) · local gradient per
parameter · the all-reduce hub · averaged gradient per parameter · parameters after the step.
Every digit is a recorded value (a tensor of more than one value shows its L2 norm, labelled
‖·‖); ``progress`` moves chips, bars, dots and fades, never digits. Nothing appears before its
phase: local values from phase 2, averaged values and the full-batch check from the second half
of phase 3, parameters from phase 4, "all ranks equal" when phase 4 has finished.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ddp_viz.model.frame import Align, Font, Rect, Shape, StageFrame, Text, fmt, wrap_lines
from ddp_viz.model.modelspec import ParamInfo
from ddp_viz.model.report import rows_label
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import (
    PHASE_TITLES,
    PHASES,
    Cursor,
    RunRecord,
    StepRecord,
    display_value,
    uneven_note,
)

LINE = 1.3  # line height in ems
LANE_LINE = 1.2  # rows inside a lane sit a little tighter; also the height of a text's box
AVERAGED_FROM = 0.5  # the averaged values arrive halfway through the all-reduce phase


def ease(t: float) -> float:
    t = min(1.0, max(0.0, t))
    return t * t * (3 - 2 * t)


def short_name(name: str) -> str:
    """``weight`` → ``w``, ``0.bias`` → ``0.b``: the last part of the name by its initial."""
    *head, last = name.split(".")
    return ".".join([*head, last[:1]])


def grad_label(p: ParamInfo) -> str:
    return f"∇{short_name(p.name)}" if p.numel == 1 else f"‖∇{short_name(p.name)}‖"


def param_label(p: ParamInfo) -> str:
    return short_name(p.name) if p.numel == 1 else f"‖{short_name(p.name)}‖"


@dataclass
class _Line:
    """A line of the title, caption or footer, with an optional right-aligned companion."""

    text: str
    font: Font
    color: str
    right: tuple[str, Font, str] | None = None

    @property
    def height(self) -> float:
        return self.font.px * LINE


@dataclass
class _Layout:
    f: float  # lane type size
    rows: int  # text rows per lane
    shown: list[ParamInfo]  # parameters with a row of their own
    hidden: int  # parameters summarised as "+k more"
    data: Rect  # the data table (w = 0: folded away)
    lanes: list[Rect]
    cols: list[float]  # x of the 6 column starts, plus the right edge


class _Builder:
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        self.rec, self.cursor, self.ctx = rec, cursor, ctx
        self.progress = min(1.0, max(0.0, progress))
        self.phase = cursor.phase
        self.t = ctx.theme
        self.frame = StageFrame(ctx.width, ctx.height, self.t.panel)
        self.step: StepRecord | None = (
            rec.steps[cursor.step] if cursor.step < len(rec.steps) else None
        )
        self.base = max(ctx.base_px, ctx.min_px)
        self.pad = self.base * 0.6

    # --- helpers ---------------------------------------------------------------------------
    def width(self, text: str, font: Font) -> float:
        return self.ctx.measure(text, font)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        font: Font,
        color: str,
        align: Align = Align.LEFT,
        key: str = "",
        value: float | None = None,
        alpha: int = 255,
    ) -> Text:
        """One line whose box is exactly its measured size; ``x`` is its left, centre or
        right edge by ``align``, ``y`` its top."""
        w = self.width(text, font)
        left = {Align.LEFT: x, Align.CENTER: x - w / 2, Align.RIGHT: x - w}[align]
        item = Text(
            Rect(left, y, w, font.px * LANE_LINE),
            text,
            font,
            color,
            align,
            False,
            key,
            value,
            alpha,
        )
        self.frame.texts.append(item)
        return item

    def shape(self, **kwargs: object) -> None:
        self.frame.shapes.append(Shape(**kwargs))  # type: ignore[arg-type]

    # --- the whole frame -------------------------------------------------------------------
    def build(self) -> StageFrame:
        title = self.plan_title()
        caption = self.plan_caption()
        head, detail = self.plan_footer()
        # The lanes' numbers come first: drop the caption, then the checks' details, then
        # shrink the headings until every lane fits at the smallest allowed type.
        need = self.lanes_need(self.ctx.min_px)
        while self.used(title, caption, head, detail) + need > self.ctx.height:
            if caption:
                caption = caption[:-1]
            elif detail:
                detail = detail[:-1]
            elif self.base > self.ctx.min_px:
                self.base = self.ctx.min_px
                title, (head, detail) = self.plan_title(), self.plan_footer()
                detail, caption = [], []
            else:
                break
        y = self.pad * 0.6
        for line in title + caption:
            self.emit(line, y)
            y += line.height
        footer = head + detail
        bottom = self.ctx.height - self.pad * 0.6 - sum(line.height for line in footer)
        fy = bottom
        for line in footer:
            self.emit(line, fy)
            fy += line.height
        lay = self.layout(y + self.pad * 0.5, bottom - self.pad * 0.5)
        self.data_table(lay)
        for r in range(self.rec.world_size):
            self.lane(lay, r)
        if self.step is not None:
            self.hub(lay)
        return self.frame

    def used(self, *groups: list[_Line]) -> float:
        return sum(line.height for g in groups for line in g) + self.pad * 2.2

    def lanes_need(self, f: float) -> float:
        n = max(1, self.rec.world_size)
        rows = max(2, len(self.rec.params))
        return n * f * (rows * LANE_LINE + 0.5) * 1.01 + (n - 1) * self.lane_gap

    @property
    def lane_gap(self) -> float:
        return max(3.0, self.base * 0.25)

    def emit(self, line: _Line, y: float) -> None:
        self.text(self.pad, y, line.text, line.font, line.color)
        if line.right:
            right, font, color = line.right
            self.text(
                self.ctx.width - self.pad,
                y + (line.font.px - font.px) * 0.5,
                right,
                font,
                color,
                Align.RIGHT,
            )

    def plan_title(self) -> list[_Line]:
        t, rec = self.t, self.rec
        big = Font(self.base * 1.2, bold=True)
        small = Font(self.base)
        total = max(rec.steps_planned, len(rec.steps))
        left = f"Step {self.cursor.step + 1} of {total}  ·  {PHASE_TITLES[PHASES[self.phase]]}"
        status = {
            "running": "live run",
            "finished": "recorded run",
            "failed": "run failed",
            "cancelled": "run cancelled",
        }.get(rec.status, "")
        right = f"{status} · {rec.world_size} rank(s), gloo"
        room = self.ctx.width - 2 * self.pad
        if self.width(left, big) + self.width(right, small) + self.base > room:
            right = status  # the phase title matters more than the rank count
        if self.width(left, big) + self.width(right, small) + self.base > room:
            right = ""
        if self.width(left, big) > room:
            big = Font(max(self.ctx.min_px, big.px * room / self.width(left, big)), bold=True)
        color = t.bad if rec.status in ("failed", "cancelled") else t.muted
        return [_Line(left, big, t.text, (right, small, color) if right else None)]

    def plan_caption(self) -> list[_Line]:
        text = self.ctx.phase_text.get(PHASES[self.phase], "")
        if self.step is None:
            text = "Waiting for the ranks to report this step…"
        font = Font(self.base)
        lines = wrap_lines(text, font, self.ctx.width - 2 * self.pad, self.width)
        return [_Line(line, font, self.t.muted) for line in lines[:3]]

    # --- footer: the checks ------------------------------------------------------------------
    def plan_footer(self) -> tuple[list[_Line], list[_Line]]:
        """(headlines, details): the checks once they are earned, or why the run ended."""
        t, rec, st = self.t, self.rec, self.step
        font = Font(self.base, bold=True)
        body = Font(max(self.ctx.min_px, self.base * 0.9))
        room = self.ctx.width - 2 * self.pad
        head: list[_Line] = []
        detail: list[_Line] = []
        if rec.status in ("failed", "cancelled"):
            what = "■ run cancelled" if rec.status == "cancelled" else "✗ run failed"
            head.append(
                _Line(f"{what} after {rec.complete_prefix()} complete step(s)", font, t.bad)
            )
            if rec.status == "failed" and rec.reason:
                detail = [
                    _Line(w, body, t.bad) for w in wrap_lines(rec.reason, body, room, self.width)
                ]
            return head, detail
        if st is None:
            return head, detail
        equal = self.phase == 3 and self.progress >= 1.0
        agree = st.ranks_agree() if equal else None
        mark = "○" if agree is None else ("✓" if agree else "✗")
        eq_color = t.muted if agree is None else (t.ok if agree else t.bad)
        eq_text = f"{mark} all ranks equal" if agree is not False else "✗ ranks differ"
        check = self.average_check(st)
        if check is None:
            return [_Line(eq_text, font, eq_color)], detail
        same, paragraphs = check
        verdict = "✓ average = full batch" if same else "✗ average ≠ full batch"
        first = f"{eq_text}    {verdict}"
        if self.width(first, font) <= room:
            head.append(_Line(first, font, t.ok if same else t.bad))
        else:
            head += [_Line(eq_text, font, eq_color), _Line(verdict, font, t.ok if same else t.bad)]
        for para in paragraphs:
            detail += [_Line(w, body, t.text) for w in wrap_lines(para, body, room, self.width)]
        return head, detail

    def average_check(self, st: StepRecord) -> tuple[bool, list[str]] | None:
        """(DDP's average equals the full batch?, explanation) once the averages are shown."""
        if st.reference is None or not self.averaged_shown():
            return None
        same = bool(st.average_is_full_batch())
        ref = st.reference
        params = self.rec.params
        avg = st.averaged() or {}

        def listing(grads: dict[str, list[float]]) -> str:
            return ", ".join(
                f"{grad_label(p)} {fmt(display_value(grads.get(p.name)))}" for p in params
            )

        if same:
            return True, [
                f"full-batch reference (one process, float64): {listing(ref.full_batch_grads)}"
            ]
        return False, [
            f"DDP's average: {listing(avg)} = the shard average by hand: "
            f"{listing(ref.manual_average)}",
            f"full batch over all rows (reference): {listing(ref.full_batch_grads)}",
            "why: " + uneven_note(ref.shard_sizes),
        ]

    def averaged_shown(self) -> bool:
        return self.phase >= 3 or (self.phase == 2 and self.progress >= AVERAGED_FROM)

    # --- layout ------------------------------------------------------------------------------
    def layout(self, top: float, bottom: float) -> _Layout:
        n = max(1, self.rec.world_size)
        params = self.rec.params
        gap = self.lane_gap
        height = max(1.0, bottom - top)
        lane_h = (height - gap * (n - 1)) / n
        shown = list(params)
        while True:
            rows = max(2, len(shown) + (1 if len(shown) < len(params) else 0))
            f = min(self.base, lane_h / (rows * LANE_LINE + 0.5))
            if f >= self.ctx.min_px or rows <= 2:
                break
            shown = shown[:-1]  # fewer parameter rows, never smaller type than the floor
        lane_h = min(lane_h, f * (rows * LANE_LINE + 1.2))
        block = lane_h * n + gap * (n - 1)
        y0 = top + (height - block) / 2
        data_w = self.data_width(f)
        x0 = self.pad + data_w + (self.pad if data_w else 0)
        avail = self.ctx.width - self.pad - x0
        widths = self.columns(f, shown)
        if sum(widths) > avail and data_w:
            data_w, x0 = 0.0, self.pad  # fold the data table before shrinking the numbers
            avail = self.ctx.width - 2 * self.pad
        for _ in range(4):
            need = sum(widths)
            if need <= avail or f <= self.ctx.min_px:
                break
            f = max(self.ctx.min_px, f * avail / need * 0.99)
            widths = self.columns(f, shown)
        spare = max(0.0, avail - sum(widths))
        for i, share in ((2, 0.3), (3, 0.1), (4, 0.3), (5, 0.1), (1, 0.2)):
            widths[i] += spare * share
        cols = [x0]
        for w in widths:
            cols.append(cols[-1] + w)
        lanes = [Rect(x0, y0 + i * (lane_h + gap), cols[-1] - x0, lane_h) for i in range(n)]
        data = Rect(self.pad, top, data_w, height)
        return _Layout(f, rows, shown, len(params) - len(shown), data, lanes, cols)

    def values_of(self, kind: str) -> list[str]:
        st = self.step
        if st is None:
            return ["−00.00"]
        out = ["−00.00"]
        for rs in st.ranks.values():
            tensors = {"local": rs.local, "averaged": rs.averaged, "params": rs.params}[kind]
            if tensors:
                out += [fmt(display_value(v)) for v in tensors.values()]
        return out

    def columns(self, f: float, shown: list[ParamInfo]) -> list[float]:
        small, bold, mono = Font(f), Font(f, bold=True), Font(f, mono=True)
        inner = f * 0.6  # padding inside each column
        pids = [f"pid {p}" for p in self.rec.pids.values()] or ["pid 999999"]
        who = f * 1.4 + max(
            self.width(f"rank {self.rec.world_size - 1}", bold),
            max(self.width(p, small) for p in pids),
        )
        shard_texts = [f"rows {rows_label(r)}" for r in self.rec.shards] or ["rows 1–2"]
        st = self.step
        losses = [f"loss {fmt(rs.loss)}" for rs in st.ranks.values()] if st else []
        shard = max(self.width(s, small) for s in shard_texts + losses + ["loss −00.00"]) + f
        label = max([self.width(grad_label(p), small) for p in shown] + [f])
        num = max(self.width(v, mono) for v in self.values_of("local") + self.values_of("averaged"))
        grads = label + f * 0.5 + f * 1.5 + f * 0.5 + num
        hub = max(f * 3.2, self.width("then Σ", Font(f, bold=True)) * 1.5 + f)
        before = self.rec.params_before(self.cursor.step)
        after = max(
            [
                self.width(f"{param_label(p)} {fmt(display_value(before.get(p.name)))} →", small)
                + f * 0.4
                for p in shown
            ]
            + [f]
        ) + max(self.width(v, mono) for v in self.values_of("params"))
        return [w + inner for w in (who, shard, grads, hub, grads, after)]

    def data_width(self, f: float) -> float:
        x, y = self.rec.scenario.get("x", []), self.rec.scenario.get("y", [])
        if not x:
            return 0.0
        font = Font(f, mono=True)
        texts = [f"{i + 1}: {fmt(a)}, {fmt(b)}" for i, (a, b) in enumerate(zip(x, y, strict=False))]
        widest = max(self.width(s, font) for s in texts[:50])
        return max(widest, self.width("data (x, y)", Font(f))) + f

    # --- pieces ------------------------------------------------------------------------------
    def data_table(self, lay: _Layout) -> None:
        if lay.data.w <= 0:
            self._row_y: dict[int, float] = {}
            return
        t, f = self.t, lay.f
        x, y = self.rec.scenario.get("x", []), self.rec.scenario.get("y", [])
        owner = {i: r for r, rows in enumerate(self.rec.shards) for i in rows}
        box = lay.data
        self.shape(kind="rrect", box=box, stroke=t.grid, fill=t.window, radius=6)
        self.text(box.cx, box.y + f * 0.3, "data (x, y)", Font(f), t.muted, Align.CENTER)
        row_h = f * LINE * 1.15
        first = box.y + f * 0.3 + f * LINE * 1.2
        fit = max(1, int((box.bottom - first - f * 0.3) // row_h))
        shown = min(len(x), fit if fit >= len(x) else fit - 1)
        self._row_y = {}
        for i in range(shown):
            ry = first + i * row_h
            color = t.rank_color(owner.get(i, 0))
            self.shape(
                kind="rrect",
                box=Rect(box.x + f * 0.25, ry, box.w - f * 0.5, row_h * 0.92),
                stroke=color,
                fill=color,
                fill_alpha=40,
                width=2,
                radius=4,
            )
            self.text(
                box.cx,
                ry + (row_h * 0.92 - f * LINE) / 2,
                f"{i + 1}: {fmt(x[i])}, {fmt(y[i])}",
                Font(f, mono=True),
                t.text,
                Align.CENTER,
            )
            self._row_y[i] = ry
        if shown < len(x):
            self.text(
                box.cx,
                first + shown * row_h,
                f"+{len(x) - shown} more",
                Font(f),
                t.muted,
                Align.CENTER,
            )

    def lane(self, lay: _Layout, r: int) -> None:
        t, f, st = self.t, lay.f, self.step
        lane = lay.lanes[r]
        color = t.rank_color(r)
        self.shape(
            kind="rrect",
            box=lane,
            stroke=color,
            width=max(1.5, t.line_px),
            fill=color,
            fill_alpha=22,
            radius=6,
        )
        row_h = f * LANE_LINE
        top = lane.y + (lane.h - lay.rows * row_h) / 2

        def row_y(i: int) -> float:
            return top + i * row_h

        inner = f * 0.3
        c = [x + inner for x in lay.cols]
        # who
        self.shape(
            kind="marker",
            box=Rect(c[0], lane.cy - f * 0.45, f * 0.9, f * 0.9),
            fill=color,
            stroke=t.text,
            width=1.2,
            key=f"marker:{t.rank_marker(r)}",
        )
        self.text(c[0] + f * 1.4, row_y(0), f"rank {r}", Font(f, bold=True), t.text)
        pid = self.rec.pids.get(r)
        self.text(c[0] + f * 1.4, row_y(1), f"pid {pid}" if pid else "starting", Font(f), t.muted)
        # shard chip, flying in from the data table during phase 1
        rows = self.rec.shards[r] if r < len(self.rec.shards) else []
        label = f"rows {rows_label(rows)}"
        chip_w = self.width(label, Font(f)) + f * 0.6
        dst_x, dst_y = c[1], row_y(0)
        x, y = dst_x, dst_y
        if self.phase == 0 and st is not None and rows and rows[0] in getattr(self, "_row_y", {}):
            k = ease(self.progress)
            src_x, src_y = lay.data.cx - chip_w / 2, self._row_y[rows[0]]
            x, y = src_x + (dst_x - src_x) * k, src_y + (dst_y - src_y) * k
        self.shape(
            kind="rrect",
            box=Rect(x, y, chip_w, row_h),
            stroke=color,
            fill=color,
            fill_alpha=70,
            width=2,
            radius=5,
        )
        self.text(x + f * 0.3, y, label, Font(f), t.text, key=f"rank{r}.rows")
        if st is None:
            return
        rs = st.ranks.get(r)
        if rs is None:
            return
        if self.phase >= 1 and rs.loss is not None:
            alpha = self.fade(1)
            self.text(
                c[1],
                row_y(1),
                f"loss {fmt(rs.loss)}",
                Font(f),
                t.text,
                key=f"rank{r}.loss",
                value=rs.loss,
                alpha=alpha,
            )
        scale = self.scale(st)
        if self.phase >= 1 and rs.local is not None:
            grow = ease(self.progress) if self.phase == 1 else 1.0
            self.grads(lay, r, 2, "local", rs.local, color, grow, scale, top)
        if rs.averaged is not None and self.averaged_shown():
            grow = (
                ease((self.progress - AVERAGED_FROM) / (1 - AVERAGED_FROM))
                if self.phase == 2
                else 1.0
            )
            self.grads(lay, r, 4, "averaged", rs.averaged, t.accent, grow, scale, top)
        if self.phase == 3 and rs.params is not None:
            self.after_step(lay, r, rs.params, color, top)

    def fade(self, phase: int) -> int:
        return round(255 * ease(self.progress * 2)) if self.phase == phase else 255

    def scale(self, st: StepRecord) -> float:
        vals = [
            abs(display_value(v))
            for rs in st.ranks.values()
            for g in (rs.local, rs.averaged)
            if g
            for v in g.values()
        ]
        vals = [v for v in vals if math.isfinite(v)]
        return max(vals, default=1.0) or 1.0

    def grads(
        self,
        lay: _Layout,
        r: int,
        col: int,
        kind: str,
        grads: dict[str, list[float]],
        color: str,
        grow: float,
        scale: float,
        top: float,
    ) -> None:
        t, f = self.t, lay.f
        inner = f * 0.3
        left, right = lay.cols[col] + inner, lay.cols[col + 1] - inner
        label_w = max([self.width(grad_label(p), Font(f)) for p in lay.shown] + [f])
        num_w = max(
            self.width(v, Font(f, mono=True))
            for v in self.values_of("local") + self.values_of("averaged")
        )
        bar_l, bar_r = left + label_w + f * 0.4, right - num_w - f * 0.4
        alpha = round(255 * min(1.0, grow * 2))
        for i, p in enumerate(lay.shown):
            y = top + i * f * LANE_LINE
            v = display_value(grads.get(p.name))
            self.text(left, y, grad_label(p), Font(f), t.muted, alpha=alpha)
            frac = min(1.0, abs(v) / scale) if math.isfinite(v) else 0.0
            bar_w = max(1.0, (bar_r - bar_l) * frac * grow)
            self.shape(
                kind="rect",
                box=Rect(bar_l, y + f * 0.25, bar_w, f * 0.8),
                fill=color,
                fill_alpha=200,
                key=f"bar:rank{r}.{kind}.{p.name}",
            )
            self.text(
                right,
                y,
                fmt(v),
                Font(f, mono=True),
                t.text,
                Align.RIGHT,
                key=f"rank{r}.{kind}.{p.name}",
                value=v,
                alpha=alpha,
            )
        if lay.hidden:
            y = top + len(lay.shown) * f * LANE_LINE
            self.text(left, y, f"+{lay.hidden} more", Font(f), t.muted, alpha=alpha)

    def after_step(
        self, lay: _Layout, r: int, params: dict[str, list[float]], color: str, top: float
    ) -> None:
        t, f = self.t, lay.f
        inner = f * 0.3
        left, right = lay.cols[5] + inner, lay.cols[6] - inner
        before = self.rec.params_before(self.cursor.step)
        k = ease(self.progress)
        for i, p in enumerate(lay.shown):
            y = top + i * f * LANE_LINE
            b = display_value(before.get(p.name))
            a = display_value(params.get(p.name))
            head = self.text(
                left,
                y,
                f"{param_label(p)} {fmt(b)} →",
                Font(f),
                t.muted,
                key=f"rank{r}.before.{p.name}",
                value=b,
            )
            after = self.text(
                right,
                y,
                fmt(a),
                Font(f, mono=True),
                t.text,
                Align.RIGHT,
                key=f"rank{r}.params.{p.name}",
                value=a,
                alpha=round(255 * min(1.0, k * 1.5)),
            )
            # the update travels from the old value to the new one; the digits never do
            x0, x1 = head.box.right + f * 0.15, after.box.x - f * 0.15
            if x1 > x0:
                self.shape(
                    kind="line",
                    points=((x0, y + f * 1.1), (x0 + (x1 - x0) * k, y + f * 1.1)),
                    stroke=color,
                    width=max(2.0, t.line_px),
                )

    def hub(self, lay: _Layout) -> None:
        t, f = self.t, lay.f
        lanes = lay.lanes
        cx = (lay.cols[3] + lay.cols[4]) / 2
        cy = (lanes[0].y + lanes[-1].bottom) / 2
        label_font = Font(f, bold=True)
        label_w = max(self.width(s, label_font) for s in (f"÷ {self.rec.world_size}", "then Σ"))
        radius = min(
            (lay.cols[4] - lay.cols[3]) / 2 - f * 0.2,
            max(label_w * 0.75, (lanes[-1].bottom - lanes[0].y) / 2),
        )
        radius = max(radius, label_w * 0.6)
        active, done = self.phase == 2, self.phase >= 2
        lw = max(2.0, t.line_px * (1.5 if active else 1.0))
        dot_r = f * 0.35
        inbound = self.phase > 2 or (done and self.progress >= AVERAGED_FROM)
        for r, lane in enumerate(lanes):
            start = (lay.cols[3] + dot_r, lane.cy)
            end = (lay.cols[4] - dot_r, lane.cy)
            self.shape(
                kind="line",
                points=(start, (cx, cy)),
                stroke=t.rank_color(r),
                stroke_alpha=220 if done else 70,
                width=lw,
            )
            self.shape(
                kind="line",
                points=((cx, cy), end),
                stroke=t.accent,
                stroke_alpha=220 if inbound else 70,
                width=lw,
            )
            if active:
                if self.progress < AVERAGED_FROM:
                    k, a, b, c = (
                        ease(self.progress / AVERAGED_FROM),
                        start,
                        (cx, cy),
                        t.rank_color(r),
                    )
                else:
                    k = ease((self.progress - AVERAGED_FROM) / (1 - AVERAGED_FROM))
                    a, b, c = (cx, cy), end, t.accent
                px, py = a[0] + (b[0] - a[0]) * k, a[1] + (b[1] - a[1]) * k
                self.shape(
                    kind="ellipse",
                    box=Rect(px - dot_r, py - dot_r, 2 * dot_r, 2 * dot_r),
                    fill=c,
                    key="dot",
                )
        self.shape(
            kind="ellipse",
            box=Rect(cx - radius, cy - radius, 2 * radius, 2 * radius),
            stroke=t.accent if done else t.grid,
            width=lw,
            fill=t.panel,
            key="hub",
        )
        color = t.text if done else t.muted
        self.text(
            cx,
            cy - f * LINE,
            f"÷ {self.rec.world_size}",
            label_font,
            color,
            Align.CENTER,
            key="hub.label",
        )
        self.text(cx, cy, "then Σ", label_font, color, Align.CENTER, key="hub.label")


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    if record is None or record.world_size == 0:
        frame = StageFrame(ctx.width, ctx.height, ctx.theme.panel)
        font = Font(max(ctx.min_px, ctx.theme.font_px * 1.3))
        lines = wrap_lines(ctx.message, font, ctx.width * 0.8, ctx.measure)
        y = (ctx.height - len(lines) * font.px * LINE) / 2
        for i, line in enumerate(lines):
            w = ctx.measure(line, font)
            frame.texts.append(
                Text(
                    Rect((ctx.width - w) / 2, y + i * font.px * LINE, w, font.px * LINE),
                    line,
                    font,
                    ctx.theme.muted,
                    Align.CENTER,
                )
            )
        return frame
    return _Builder(record, cursor, progress, ctx).build()
