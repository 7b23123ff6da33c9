"""The sharded scene: what each rank holds, and the collectives each way issues, from the run.

Phase 0 (holds): a table of the bytes one rank held after the step for each way, against the
formulas it spells out, and below it the rows each rank owns of every parameter
(``scene_holds``). Phases 1-3 (forward, backward, step): one column per way and one row per
layer, each cell listing the collectives that part of the step issued for that layer,
numbered in the order the rank issued them and revealed in that order; under it a lane per
rank with every collective of the phase from its start to its end, labelled with the same
numbers, on a time axis (``scene_lanes``). The step phase adds the checks against plain DDP
(``scene_checks``). When the stage is short the lanes keep a rank label on every lane and the
table gives way first: to one line for the ways the lanes do not show, then to nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ddp_viz.kinds.sharded.model import KIND, LAYERS, WAYS, ShardedRecord, spec_of
from ddp_viz.kinds.sharded.scene_checks import Check, checks, draw_checks, one_check
from ddp_viz.kinds.sharded.scene_holds import draw_slices, held_table
from ddp_viz.kinds.sharded.scene_lanes import OPS, busiest_way, draw_lanes, human, lanes_need
from ddp_viz.model.frame import Align, Font, Rect, StageFrame
from ddp_viz.model.scenes.base import LINE, FrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import Cursor, RunRecord

PHASE_WORDS = ("holds", "forward", "backward", "step")
PHASES = ("shards", "local", "allreduce", "step")  # the lesson's phase_text keys
TITLES = ("what each rank holds", "forward", "backward", "optimizer step")
LONG = {
    "all_reduce": "all-reduce",
    "broadcast": "broadcast",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
}


@dataclass
class Grid:
    """The table of the phase's collectives: per (way, row) its calls' texts, the words they
    use, and how many lines each row takes."""

    cells: dict[tuple[int, str], list[tuple[int, str]]] = field(default_factory=dict)
    cols: list[int] = field(default_factory=list)  # the ways (their index) with a column
    rows: dict[str, int] = field(default_factory=dict)  # row → lines
    joined: bool = True  # a cell's calls on one line, " · " between them
    # beside the lanes, this wide (0: above them): one way's calls, one a line, when the
    # table above took the height the lanes need (ZeRO-1's broadcasts at 8 ranks)
    side: float = 0.0
    # the cells' type when even the shortest words are wider than a column (a projector's
    # type on a 600 px stage: "#1 AR 23.1 kB" ran into the next column); 0: the stage's
    px: float = 0.0

    def height(self, lh: float) -> float:
        return (1 + sum(self.rows.values())) * lh + lh * 0.3


def below(area: Rect, used: float) -> Rect:
    return Rect(area.x, area.y + used, area.w, area.h - used)


class ShardedBuilder(FrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(ctx)
        self.rec, self.cursor, self.phase = rec, cursor, cursor.phase
        self.phase_word = PHASE_WORDS[self.phase]
        self.progress = min(1.0, max(0.0, progress))
        self.part: ShardedRecord = rec.parts[KIND]
        self.spec = spec_of(rec)
        self.world = rec.world_size
        self.rank = 1 if self.world > 1 else 0  # the rank the numbers are about
        self.small = Font(max(ctx.min_px, self.base * 0.85))
        self.lh = self.small.px * LINE
        self.text_h = self.small.px * self.line  # a text's box
        # what each rank holds is the lesson: a size up from the base, but on a projector
        grow = 1.0 if ctx.theme.name == "projector" else 1.1
        self.body = Font(max(self.small.px, self.base * grow))
        self.body_lh = self.body.px * LINE
        self.lean = False

    def build(self, with_caption: bool = True) -> StageFrame:
        """The frame; ``with_caption`` False leaves the phase's sentence and the line of
        FSDP2's gathered bytes out (room for the rank labels of the ownership grids, which the
        caller asks for when they lacked it)."""
        step = self.cursor.step
        self.lean = not with_caption  # FSDP2's gathered bytes give way too
        left = f"Step {step + 1} of {self.spec.steps} · {TITLES[self.phase]}"
        rights = [f"{self.world} ranks · numbers of rank {self.rank}", f"{self.world} ranks"]
        y = self.pad * 0.6
        waiting = len(self.part.at(WAYS[-1].value, step)) < self.world
        title = self.title(left, rights, self.t.muted)
        caption = self.caption(PHASES[self.phase], waiting, 2)
        # the lanes keep a label on every rank's lane before the caption keeps its sentence
        # (8 ranks on a projector at 1280×800); the lesson's text says it too
        used = sum(x.height for x in title + caption) + self.pad * 1.9
        check = self.lh * 1.2 if self.phase == 3 else 0.0
        if not with_caption or (self.phase and self.ctx.height - used < lanes_need(self) + check):
            caption = []
        lines = title + caption
        for line in lines:
            self.emit(line, y)
            y += line.height
        top = y + self.pad * 0.3
        area = Rect(self.pad, top, self.ctx.width - 2 * self.pad, self.ctx.height - top - self.pad)
        if waiting:
            return self.frame
        if self.phase == 0:
            rest = below(area, held_table(self, area, step))
            if rest.h > self.lh * 2:
                draw_slices(self, rest, step)
        else:
            self.timeline(area, step)
        return self.frame

    def timeline(self, area: Rect, step: int) -> None:
        """The table, the checks (after the step) and the lanes. When the lanes would lose
        their rank labels the checks shrink first (the ring's line goes, then both ways' in
        one line), then the table gives way to a line, then to nothing."""
        lh = self.lh
        grid = self.grid(area, step)
        full = checks(self, step) if self.phase == 3 else []
        short = full[:2]
        one = [one_check(self, step)] if full else []
        others = self.others_line(area, step)
        side = self.side_grid(area, step)
        plans: list[tuple[Grid | str | None, list[Check]]] = [
            (grid, full),
            (grid, short),
            (grid, one),
            *([(side, one or short)] if side else []),
            (others, one or short),
            (None, one or short),
        ]
        need = lanes_need(self)
        for table, lines in plans:
            above = isinstance(table, Grid) and not table.side
            used = table.height(lh) if above else lh * 1.2 if table and others else 0.0
            used += len(lines) * lh + lh * 0.2 if lines else 0.0
            beside = table.height(lh) if isinstance(table, Grid) and table.side else 0.0
            if area.h - used >= max(need, beside):
                break
        rest = area
        if isinstance(table, Grid) and table.side:
            self.beside_lanes(table, others, lines, area, step)
            return
        if isinstance(table, Grid):
            rest = below(rest, self.draw_grid(table, rest))
        elif table:
            self.text(rest.x, rest.y, table, self.small, self.t.muted, key="calls.others")
            rest = below(rest, lh * 1.2)
        if lines:
            rest = below(rest, draw_checks(self, rest, lines))
        if rest.h > lh * 2:
            draw_lanes(self, rest, step)

    def beside_lanes(self, g: Grid, others: str, lines: list[Check], area: Rect, step: int) -> None:
        """The ways the lanes leave out in a line, the checks, then the lanes with the table
        of their way's calls on their right."""
        rest = area
        if others:
            self.text(rest.x, rest.y, others, self.small, self.t.muted, key="calls.others")
            rest = below(rest, self.lh * 1.2)
        if lines:
            rest = below(rest, draw_checks(self, rest, lines))
        self.draw_grid(g, Rect(rest.right - g.side, rest.y, g.side, rest.h))
        lanes = Rect(rest.x, rest.y, rest.w - g.side - self.pad * 1.5, rest.h)
        if rest.h > self.lh * 2:
            draw_lanes(self, lanes, step)

    def side_grid(self, area: Rect, step: int) -> Grid | None:
        """The phase's calls of its one busy way, one a line, to stand beside the lanes; None
        when more than one way issues any, or it would take over 45% of the width."""
        f = self.small
        busy = [
            (
                i,
                [
                    c
                    for c in self.part.calls(w.value, step, self.rank)
                    if c.phase == self.phase_word
                ],
            )
            for i, w in enumerate(WAYS)
        ]
        busy = [(i, calls) for i, calls in busy if calls]
        if len(busy) != 1:
            return None
        i, calls = busy[0]
        g = Grid(cols=[i], joined=False)
        for c in calls:
            text = f"#{c.seq + 1} {OPS[c.op]} {human(max(c.bytes_in, c.bytes_out))}"
            g.cells.setdefault((i, c.layer or "bucket"), []).append((c.seq, text))
        for row in (*LAYERS, "bucket"):
            if (i, row) in g.cells:
                g.rows[row] = len(g.cells[(i, row)])
        texts = [x for v in g.cells.values() for _, x in v] + [WAYS[i].label]
        g.side = self.grid_label_w() + max(self.width(x, f) for x in texts) + f.px * 0.5
        return g if g.side <= area.w * 0.45 else None

    def grid(self, area: Rect, step: int) -> Grid:
        """Every call of the phase in its cell (all of them, so the layout stays put while
        they are revealed), in the longest words that keep a cell on one line; a column for
        each way that issued any (the others are named in the header)."""
        f = self.small
        mine = [
            [c for c in self.part.calls(way.value, step, self.rank) if c.phase == self.phase_word]
            for way in WAYS
        ]
        cols = [i for i, calls in enumerate(mine) if calls] or list(range(len(WAYS)))
        col_w = (area.w - self.grid_label_w()) / len(cols) - f.px
        for words, joined in ((LONG, True), (OPS, True), (OPS, False)):
            g = Grid(cols=cols, joined=joined)
            for i in cols:
                for c in mine[i]:
                    size = human(max(c.bytes_in, c.bytes_out))
                    text = f"#{c.seq + 1} {words[c.op]} {size}"
                    g.cells.setdefault((i, c.layer or "bucket"), []).append((c.seq, text))
            texts = [
                " · ".join(x for _, x in v) if joined else max((x for _, x in v), key=len)
                for v in g.cells.values()
            ]
            if all(self.width(x, f) <= col_w for x in texts):
                break
            if not joined:  # no shorter words: smaller type, so no cell runs into the next
                widest = max((self.width(x, f) for x in texts), default=0.0)
                g.px = f.px * max(0.0, col_w + f.px * 0.5) / widest * 0.98
        for row in (*LAYERS, "bucket"):
            n = max((len(g.cells.get((i, row), [])) for i in cols), default=0)
            if row != "bucket" or n:
                g.rows[row] = 1 if g.joined else max(1, n)
        return g

    def grid_label_w(self) -> float:
        return max(self.width(x, self.small) for x in ("hidden", "bucket")) + self.small.px

    def draw_grid(self, g: Grid, area: Rect) -> float:
        """The table, each way's calls revealed in issue order; its height."""
        f, t, lh = self.small, self.t, self.lh
        label_w = self.grid_label_w()
        col_w = (area.w - label_w) / len(g.cols)
        widest = max(self.width(WAYS[i].label, f) for i in g.cols)
        # the heads as the cells: smaller type rather than one head into the next
        head = Font(f.px * (col_w - f.px * 0.5) / widest) if widest > col_w - f.px * 0.5 else f
        for k, i in enumerate(g.cols):
            self.text(
                area.x + label_w + k * col_w, area.y, WAYS[i].label, head, t.muted, key="calls.head"
            )
        idle = [w.label for i, w in enumerate(WAYS) if i not in g.cols]
        used = area.x + label_w + (len(g.cols) - 1) * col_w + self.width(WAYS[g.cols[-1]].label, f)
        note = f"no collective: {', '.join(idle)}"
        if idle and area.right - self.width(note, f) >= used + f.px:
            self.text(area.right, area.y, note, f, t.muted, Align.RIGHT, key="calls.idle")
        y = area.y + lh
        for row, n in g.rows.items():
            self.text(area.x, y, row, f, t.text)
            for k, i in enumerate(g.cols):
                shown = self.revealed(WAYS[i].value)
                texts = [x for seq, x in g.cells.get((i, row), []) if seq in shown]
                lines = [" · ".join(texts)] if g.joined and texts else texts
                cell = Font(g.px) if g.px else f
                for j, text in enumerate(lines[:n]):
                    key = f"call.{WAYS[i].value}.{row}.{j}"
                    self.text(area.x + label_w + k * col_w, y + j * lh, text, cell, t.text, key=key)
            y += n * lh
            self.shape(kind="line", points=((area.x, y), (area.right, y)), stroke=t.grid)
        return y - area.y + lh * 0.3

    def revealed(self, way: str) -> set[int]:
        """The places in the step (``seq``) of the phase's calls shown so far."""
        step = self.cursor.step
        calls = [c for c in self.part.calls(way, step, self.rank) if c.phase == self.phase_word]
        return {c.seq for c in calls[: round(self.progress * len(calls) + 0.499)]}

    def others_line(self, area: Rect, step: int) -> str:
        """One line for the ways the lanes do not show: their calls, or that they have none."""
        lanes, _ = busiest_way(self, step)
        ways = [w for w in WAYS if w is not lanes]
        calls = {
            w: [c for c in self.part.calls(w.value, step, self.rank) if c.phase == self.phase_word]
            for w in ways
        }
        idle = [w.label for w in ways if not calls[w]]
        for sizes in (True, False):
            parts = []
            for way in ways:
                words = [f"#{c.seq + 1} {OPS[c.op]}" for c in calls[way]]
                if sizes:
                    words = [
                        f"{x} {human(max(c.bytes_in, c.bytes_out))}"
                        for x, c in zip(words, calls[way], strict=True)
                    ]
                if words:
                    parts.append(f"{way.label}: {', '.join(words)}")
            if idle:
                parts.append(f"no collective: {', '.join(idle)}")
            text = "; ".join(parts)
            if self.width(text, self.small) <= area.w:
                return text
        return ""


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """DDP, ZeRO and FSDP2 side by side: what each rank holds and sends."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    if KIND not in record.parts:
        b = FrameBuilder(ctx)
        text = "This lesson trains DDP, ZeRO-1 and FSDP2 side by side: press Run."
        b.text(b.pad, b.pad, text, Font(b.base), b.t.muted)
        return b.frame
    frame = ShardedBuilder(record, cursor, progress, ctx).build()
    if cursor.phase == 0 and record.world_size > 1 and frame.text_with_key("slices.r0") is None:
        # the ownership grids without their rank labels (8 ranks on a projector): the caption
        # gives way to them
        bare = ShardedBuilder(record, cursor, progress, ctx).build(with_caption=False)
        if bare.text_with_key("slices.r0") is not None:
            return bare
    if cursor.phase and calls_said(frame) < 2:
        # the table of the phase's calls gave way (8 ranks on a projector), or even its line:
        # the caption, which the lesson's text says too, gives way when that brings more back
        bare = ShardedBuilder(record, cursor, progress, ctx).build(with_caption=False)
        if calls_said(bare) > calls_said(frame):
            return bare
    return frame


def calls_said(frame: StageFrame) -> int:
    """How much a frame says of the phase's calls besides the lanes: 2 a table, 1 a line."""
    if frame.text_with_key("calls.head") is not None:
        return 2
    return 1 if frame.text_with_key("calls.others") is not None else 0
