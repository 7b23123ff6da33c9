"""The sharded scene: what each rank holds, and the collectives each way issues, from the run.

Phase 0 (holds): a table of the bytes one rank held after the step for each way, against the
formulas, and below it the rows each rank owns of every parameter: ZeRO-1's whole parameters
(whose Adam state) and FSDP2's row slices. Phases 1-3 (forward, backward, step): one column
per way and one row per layer, each cell listing the collectives that part of the step
issued for that layer, numbered in the order the rank issued them and revealed in that order;
under it a lane per rank with every collective of the phase where it started and ended. The
step phase ends with the checks against plain DDP.
"""

from __future__ import annotations

from ddp_viz.kinds.sharded.model import (
    KIND,
    LAYERS,
    WAYS,
    WHAT,
    ShardedRecord,
    expected_bytes,
    spec_of,
)
from ddp_viz.kinds.sharded.scene_parts import draw_checks, draw_lanes, draw_slices, human
from ddp_viz.model.frame import Font, Rect, StageFrame
from ddp_viz.model.scenes.base import LINE, FrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import Cursor, RunRecord

PHASE_WORDS = ("holds", "forward", "backward", "step")
PHASES = ("shards", "local", "allreduce", "step")  # the lesson's phase_text keys
TITLES = ("what each rank holds", "forward", "backward", "optimizer step")
SHORT = {"all_reduce": "AR", "broadcast": "BC", "all_gather": "AG", "reduce_scatter": "RS"}
LONG = {
    "all_reduce": "all-reduce",
    "broadcast": "broadcast",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
}


class ShardedBuilder(FrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(ctx)
        self.rec, self.cursor, self.phase = rec, cursor, cursor.phase
        self.progress = min(1.0, max(0.0, progress))
        self.part: ShardedRecord = rec.parts[KIND]
        self.spec = spec_of(rec)
        self.world = rec.world_size
        self.rank = 1 if self.world > 1 else 0  # the rank the numbers are about
        self.small = Font(max(ctx.min_px, self.base * 0.85))
        self.lh = self.small.px * LINE

    def build(self) -> StageFrame:
        step = self.cursor.step
        left = f"Step {step + 1} of {self.spec.steps} · {TITLES[self.phase]}"
        rights = [f"{self.world} ranks · numbers of rank {self.rank}", f"{self.world} ranks"]
        y = self.pad * 0.6
        waiting = len(self.part.at(WAYS[-1].value, step)) < self.world
        lines = self.title(left, rights, self.t.muted) + self.caption(
            PHASES[self.phase], waiting, 2
        )
        for line in lines:
            self.emit(line, y)
            y += line.height
        area = Rect(self.pad, y + self.pad * 0.3, self.ctx.width - 2 * self.pad, 0)
        area = Rect(area.x, area.y, area.w, self.ctx.height - area.y - self.pad * 0.5)
        if waiting:
            return self.frame
        if self.phase == 0:
            used = self.held_table(area)
            rest = Rect(area.x, area.y + used, area.w, area.h - used)
            if rest.h > self.lh * 2:
                draw_slices(self, rest, step)
        else:
            used = self.calls_grid(area, step)
            rest = Rect(area.x, area.y + used, area.w, area.h - used)
            if self.phase == 3:
                used = draw_checks(self, rest, step)
                rest = Rect(rest.x, rest.y + used, rest.w, rest.h - used)
            if rest.h > self.lh * 2:
                draw_lanes(self, rest, step)
        return self.frame

    def held_table(self, area: Rect) -> float:
        """Bytes rank ``self.rank`` held for each way, and whether they match the formula."""
        f, t, lh = self.small, self.t, self.lh
        step = self.cursor.step
        heads = ["params", "grads", "Adam state", "formula"]
        label_w = max(self.width(w.label, f) for w in WAYS) + f.px
        sample = self.width("88.8 kB", f) + f.px
        col = [max(sample, self.width(h, f) + f.px) for h in heads]
        if label_w + sum(col) > area.w:
            heads, col = heads[:3], col[:3]
        x = area.x + label_w
        for head, w in zip(heads, col, strict=True):
            self.text(x, area.y, head, f, t.muted)
            x += w
        y = area.y + lh
        for i, way in enumerate(WAYS):
            e = self.part.at(way.value, step).get(self.rank)
            self.text(area.x, y, way.label, f, t.rank_color(i) if i else t.text)
            if e is not None:
                want = expected_bytes(self.spec, way, self.world, self.rank)
                x = area.x + label_w
                for what, w in zip(WHAT, col[:3], strict=True):
                    got = getattr(e, what)
                    key = f"held.{way.value}.{what}"
                    self.text(x, y, human(got), f, t.text, key=key, value=float(got))
                    x += w
                if len(heads) > 3:
                    same = all(getattr(e, k) == want[k] for k in WHAT)
                    self.text(x, y, "✓" if same else "✗", f, t.ok if same else t.bad)
            y += lh
        fsdp = self.part.at(WAYS[-1].value, step).get(self.rank)
        if fsdp is not None and fsdp.gathered:
            g = human(fsdp.gathered)
            texts = [
                f"FSDP2 also held up to {g} of whole layers ({fsdp.gathered_at})",
                f"FSDP2 also held {g} of whole layers",
                f"+ {g} gathered",
            ]
            text = next((x for x in texts if self.width(x, f) <= area.w), "")
            if text:
                self.text(area.x, y, text, f, t.muted, key="held.fsdp.gathered")
                y += lh
        return y - area.y + lh * 0.3

    def calls_grid(self, area: Rect, step: int) -> float:
        """One column per way, one row per layer (and one for what spans layers): this
        phase's collectives, numbered in issue order, revealed in that order."""
        f, t, lh = self.small, self.t, self.lh
        phase = PHASE_WORDS[self.phase]
        label_w = max(self.width(x, f) for x in ("hidden", "bucket")) + f.px
        col_w = (area.w - label_w) / len(WAYS)
        words = LONG if self.width("#88 reduce-scatter 88.8 kB", f) <= col_w - f.px else SHORT
        cells: dict[tuple[int, str], list[str]] = {}
        for i, way in enumerate(WAYS):
            calls = [c for c in self.part.calls(way.value, step, self.rank) if c.phase == phase]
            shown = calls[: round(self.progress * len(calls) + 0.499)] if calls else []
            for c in shown:
                size = human(max(c.bytes_in, c.bytes_out))
                cells.setdefault((i, c.layer or "bucket"), []).append(
                    f"#{c.seq + 1} {words[c.op]} {size}"
                )
        rows = [r for r in (*LAYERS, "bucket") if r != "bucket" or any(k[1] == r for k in cells)]
        for i, way in enumerate(WAYS):
            self.text(area.x + label_w + i * col_w, area.y, way.label, f, t.muted)
        y = area.y + lh
        most = max(1.0, (area.h - lh * 3) / lh)
        for row in rows:
            n = max((len(cells.get((i, row), [])) for i in range(len(WAYS))), default=0)
            n = int(min(max(1, n), max(1.0, most / len(rows))))
            self.text(area.x, y, row, f, t.text)
            for i in range(len(WAYS)):
                for k, text in enumerate(cells.get((i, row), [])[:n]):
                    key = f"call.{WAYS[i].value}.{row}.{k}"
                    self.text(area.x + label_w + i * col_w, y + k * lh, text, f, t.text, key=key)
            self.shape(
                kind="line",
                points=((area.x, y + n * lh), (area.right, y + n * lh)),
                stroke=t.grid,
            )
            y += n * lh
        return y - area.y + lh * 0.3


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    if KIND not in record.parts:
        b = FrameBuilder(ctx)
        text = "This lesson trains DDP, ZeRO-1 and FSDP2 side by side: press Run."
        b.text(b.pad, b.pad, text, Font(b.base), b.t.muted)
        return b.frame
    return ShardedBuilder(record, cursor, progress, ctx).build()
