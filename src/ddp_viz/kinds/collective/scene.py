"""The ring scene: a ring all-reduce on real ranks, step by step, from what they reported.

Left, the ranks on a ring; in each step every rank sends one chunk to its neighbour (a chip
that travels the arc while the step plays). Right, every rank's buffer, chunk by chunk: the
values it holds, coloured by the chunk's owner (the rank that finishes adding it up) and
filled more as the copy sums more ranks' vectors. The last step ends on what it cost: bytes
sent per rank, naive against ring, and the measured time against vector length.
"""

from __future__ import annotations

import math

from ddp_viz.kinds.collective.model import ALL_GATHER, RingState, ring_state, ring_steps
from ddp_viz.kinds.collective.scene_charts import draw_charts
from ddp_viz.model.frame import Align, Font, Rect, StageFrame, fmt
from ddp_viz.model.scenes.base import LINE, FrameBuilder, ease
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import Cursor, RunRecord

PHASE_TITLES = (
    "1 · each rank picks a chunk",
    "2 · chunks travel",
    "3 · chunks arrive",
    "4 · what each rank holds",
)
SHORT = ("picks", "travel", "arrive", "holds")


def owner(chunk: int, world: int) -> int:
    """The rank that ends reduce-scatter holding the whole sum of ``chunk``."""
    return (chunk - 1) % world


def cell_text(values: list[float], most: int = 3) -> str:
    shown = " ".join(fmt(v, 3) for v in values[:most])
    return shown + (" …" if len(values) > most else "")


class _Builder(FrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(ctx)
        self.rec, self.cursor = rec, cursor
        self.phase, self.progress = cursor.phase, min(1.0, max(0.0, progress))
        self.world = rec.world_size
        assert "collective" in rec.parts
        self.col = rec.parts["collective"]
        self.small = Font(max(ctx.min_px, self.base * 0.9))
        self.last = cursor.step >= ring_steps(self.world) - 1
        self.drew_ring = False

    def build(self) -> StageFrame:
        step = self.cursor.step
        moves = self.col.steps.get(step, {})
        # a step not arrived yet is still in one half or the other: the schedule says which
        # (the first world - 1 steps reduce-scatter, the rest all-gather)
        waiting = ALL_GATHER if step >= self.world - 1 else ""
        phase = next(iter(moves.values())).phase if moves else waiting
        half = "reduce-scatter" if phase != ALL_GATHER else "all-gather"
        self.frame.section = half if moves else ""  # the code view lights that loop only
        left = f"Ring step {step + 1} of {ring_steps(self.world)} · {half}"
        titles = [
            f"{left} · {PHASE_TITLES[self.phase]}",
            f"{left} · {SHORT[self.phase]}",
            left,
            f"Step {step + 1}/{ring_steps(self.world)} · {half}",
        ]
        charts = self.last and self.phase == 3 and bool(self.col.results)
        if charts:
            titles = ["After the ring: what each algorithm cost", "What it cost"]
        room = self.ctx.width - 2 * self.pad
        big = Font(self.base * 1.2, bold=True)
        left = next((t for t in titles if self.width(t, big) <= room), titles[-1])
        length = self.rec.scenario.get("collective", {}).get("length", 0)
        y = self.pad * 0.6
        lines = self.title(left, [f"{self.world} ranks · {length} values each"], self.t.muted)
        if not charts:
            lines += self.caption(
                ("shards", "local", "allreduce", "step")[self.phase], not moves, 2
            )
        for line in lines:
            self.emit(line, y)
            y += line.height
        if not moves:
            return self.frame
        if charts:
            draw_charts(self, y + self.pad * 0.4)
            return self.frame
        shown = step if self.phase >= 2 else step - 1
        state = ring_state(self.col, self.world, shown)
        if state is None:
            return self.frame
        top = y + self.pad * 0.4
        below = self.ctx.height - top - self.small.px * LINE * 1.5  # the verdict's line
        # the ring gives way to the buffers: as much room as three values a cell need
        f = self.small
        table = self.width(f"rank {self.world - 1}", f) + f.px
        table += self.world * (self.widest(3, f) + f.px)
        share = 0.34 if self.world <= 4 else 0.42  # more ranks: a bigger ring, fewer digits
        beside = min(below, self.ctx.width * share, self.ctx.width - 3 * self.pad - table)
        if self.world > 4:
            beside = min(below, self.ctx.width * share)
        table_h = (self.world + 1) * f.px * LINE * 1.25
        if beside < min(below, self.ctx.width * 0.3) and below - table_h > self.base * 8:
            # narrow stage: the buffers across the top, the ring under them
            y = self.table(self.pad, top, state, moves)
            side = min(below - (y - top) - self.pad, self.ctx.width - 2 * self.pad)
            if self.ring_fits(side):
                box = Rect((self.ctx.width - side) / 2, y + self.pad * 0.3, side, side)
                self.ring(box, moves)
                y += self.pad * 0.3 + side
            self.verdict(y + self.pad * 0.3)
            return self.frame
        ring_w = max(beside, min(below, self.base * 7))
        if not self.ring_fits(ring_w):  # too small for its nodes and chips: the buffers alone
            ring_w = 0.0
        table_x = self.pad + ring_w + (self.pad if ring_w else 0.0)
        self.grow(state, table_x, below)
        if ring_w:
            self.ring(Rect(self.pad, top, ring_w, ring_w), moves)
        y = self.table(table_x, top, state, moves)
        self.verdict(max(y, top + ring_w) + self.pad * 0.3)
        return self.frame

    def widest(self, most: int, f: Font) -> float:
        """The widest cell text of the whole run at ``most`` values a cell."""
        texts = [cell_text(v, most) for row in self.all_values() for v in row]
        return max((self.width(t, f) for t in texts), default=0.0)

    def all_values(self) -> list[list[list[float]]]:
        from ddp_viz.model.tensors import tensor_sample

        rows = [[tensor_sample(e.values)] for e in self.col.inputs.values()]
        rows += [
            [tensor_sample(m.chunk) for m in step.values()] for step in self.col.steps.values()
        ]
        return rows

    def grow(self, state: RingState, x: float, height: float) -> None:
        """Larger type while the buffers still fit beside the ring and above the verdict."""
        base = self.small
        for scale in (1.6, 1.4, 1.2):
            f = Font(base.px * scale)
            widest = max(self.widest(2, f), self.width("chunk 0", f))
            label_w = self.width(f"rank {self.world - 1}", f) + f.px
            wide = x + label_w + self.world * (widest + f.px) <= self.ctx.width - self.pad
            if wide and (self.world + 1) * f.px * LINE * 1.25 <= height:
                self.small = f
                return

    # --- the ring ------------------------------------------------------------------------------
    def ring_fits(self, side: float) -> bool:
        """Room for the nodes, and for two chips near one node not to touch."""
        f = self.small
        radius = side / 2 - self.base * 1.6
        chord = 2 * radius * math.sin(math.pi / self.world)
        chip = self.width(f"c{self.world - 1}", f) + f.px * 0.5
        return side >= f.px * 9 and chord >= 3.6 * max(chip, f.px * 1.9)

    def node(self, area: Rect, r: int) -> tuple[float, float]:
        radius = min(area.w, area.h) / 2 - self.base * 1.6
        angle = -math.pi / 2 + 2 * math.pi * r / self.world
        return area.cx + radius * math.cos(angle), area.cy + radius * math.sin(angle)

    def ring(self, area: Rect, moves: dict) -> None:
        self.drew_ring = True
        t, f = self.t, self.small
        size = f.px * 1.9
        for r in range(self.world):
            (x0, y0), (x1, y1) = self.node(area, r), self.node(area, (r + 1) % self.world)
            self.shape(
                kind="line",
                points=((x0, y0), (x1, y1)),
                stroke=t.muted,
                width=1.5,
                stroke_alpha=140,
            )
        for r in range(self.world):
            x, y = self.node(area, r)
            box = Rect(x - size / 2, y - size / 2, size, size)
            self.shape(kind="ellipse", box=box, fill=t.panel, stroke=t.rank_color(r), width=2.5)
            self.text(
                x, y - f.px * LINE / 2, str(r), Font(f.px, bold=True), t.rank_color(r), Align.CENTER
            )
        if self.phase not in (0, 1):
            return
        along = ease(self.progress) if self.phase == 1 else 0.0
        for r, move in sorted(moves.items()):
            (x0, y0), (x1, y1) = self.node(area, r), self.node(area, move.to)
            # a chip leaves the node's rim and travels the chord to the next rank
            k = 0.28 + 0.44 * along
            # to the right of its direction of travel, so two ranks' chips on one link pass
            length = math.dist((x0, y0), (x1, y1)) or 1.0
            side = f.px * 0.75
            cx = x0 + (x1 - x0) * k - (y1 - y0) / length * side
            cy = y0 + (y1 - y0) * k + (x1 - x0) / length * side
            label = f"c{move.sent}"
            w = self.width(label, f) + f.px * 0.5
            box = Rect(cx - w / 2, cy - f.px * 0.65, w, f.px * 1.3)
            color = self.t.rank_color(owner(move.sent, self.world))
            self.shape(
                kind="rrect", box=box, fill=color, radius=f.px * 0.3, layer=1, key=f"move.{r}"
            )
            self.text(
                cx,
                cy - f.px * LINE / 2,
                label,
                f,
                t.panel,
                Align.CENTER,
                key=f"move.{r}",
                value=float(move.sent),
                layer=1,
            )

    # --- the buffers ---------------------------------------------------------------------------
    def table(self, x: float, top: float, state: RingState, moves: dict) -> float:
        t, f = self.t, self.small
        lh = f.px * LINE * 1.25
        label_w = self.width(f"rank {self.world - 1}", f) + f.px
        room = self.ctx.width - self.pad - x - label_w
        cell = room / self.world
        # as many values per cell as fit for every step of the run (the picture must not
        # switch between values and counts as the step changes); none fit: the sums' counts
        most = next((n for n in (3, 2, 1) if self.widest(n, f) + f.px * 0.4 <= cell), 0)
        cell = min(cell, max(self.widest(most, f) if most else 0.0, self.width("4/4", f)) * 2)
        x0 = x + label_w
        word = "chunk " if self.width(f"chunk {self.world - 1}", f) + f.px * 0.5 <= cell else "c"
        for c in range(self.world):
            self.text(x0 + (c + 0.5) * cell, top, f"{word}{c}", f, t.muted, Align.CENTER)
        y = top + lh
        for r in range(self.world):
            if y + lh > self.ctx.height:
                break
            self.text(x, y + (lh - f.px * LINE) / 2, f"rank {r}", f, t.rank_color(r))
            move = moves.get(r)
            for c in range(self.world):
                box = Rect(x0 + c * cell + 2, y + 2, cell - 4, lh - 4)
                n = state.sums[r][c]
                alpha = int(40 + 200 * (n - 1) / max(1, self.world - 1))
                color = t.rank_color(owner(c, self.world))
                key = f"rank{r}.chunk{c}"
                self.shape(kind="rect", box=box, fill=color, fill_alpha=alpha, key=key)
                if move is not None and self.phase <= 1 and c == move.sent:
                    self.shape(kind="rect", box=box, stroke=t.text, width=2.5, key=f"sends.{r}")
                if move is not None and self.phase >= 2 and c == move.received:
                    self.shape(kind="rect", box=box, stroke=t.accent, width=3, key=f"got.{r}")
                text = cell_text(state.values[r][c], most) if most else f"{n}/{self.world}"
                ink = t.panel if alpha > 150 else t.text
                self.text(
                    box.cx,
                    y + (lh - f.px * LINE) / 2,
                    text,
                    f,
                    ink,
                    Align.CENTER,
                    key=key,
                    value=float(n),
                )
            y += lh
        return y

    def verdict(self, y: float) -> None:
        f = self.small
        if y + f.px * LINE > self.ctx.height:
            return
        if self.last and self.phase >= 2:
            agree = self.col.agree(self.world)
            if agree is None:
                return
            texts = (
                [
                    "✓ every rank holds the whole sum, equal to dist.all_reduce bit for bit",
                    "✓ equal to dist.all_reduce, bit for bit",
                    "✓ = dist.all_reduce",
                ]
                if agree
                else ["✗ a rank's sum differs from dist.all_reduce", "✗ ≠ dist.all_reduce"]
            )
            bold = Font(f.px, bold=True)
            room = self.ctx.width - 2 * self.pad
            text = next((t for t in texts if self.width(t, bold) <= room), texts[-1])
            self.text(self.pad, y, text, bold, self.t.ok if agree else self.t.bad, key="verdict")
            return
        notes = ["colour: the chunk's owner · fuller: the copy adds up more ranks' vectors"]
        if not self.drew_ring:  # the stage is too small for the ring: say what it would show
            notes = ["each rank sends its outlined chunk to rank + 1", "outlined: sent"]
        note = next((n for n in notes if self.width(n, f) <= self.ctx.width - 2 * self.pad), "")
        if note:
            self.text(self.pad, y, note, f, self.t.muted)


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """The ranks on a ring: each step's chunks and every rank's buffer, then the bytes and
    the times."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    if "collective" not in record.parts:
        b = FrameBuilder(ctx)
        b.text(
            b.pad, b.pad, "This lesson shows a collective run: press Run.", Font(b.base), b.t.muted
        )
        return b.frame
    return _Builder(record, cursor, progress, ctx).build()
