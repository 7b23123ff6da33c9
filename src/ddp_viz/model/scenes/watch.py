"""The dashboard of a watched run (your own script under ``ddp-viz watch``), at one step.

Per rank: host, pid, step time and when it reached the all-reduce; which rank the others
waited for, this step and so far; each bucket's all-reduce on one clock for every rank; and
for the latest step captured in full, every parameter's gradient norm per rank against the
average, with whether the averages are identical on every rank. Every number is recorded.
"""

from __future__ import annotations

from ddp_viz.model.frame import Align, Font, Rect, StageFrame, fmt, wrap_lines
from ddp_viz.model.scenes.base import LINE, StepFrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.tensors import tensor_norm
from ddp_viz.model.timeline import Cursor, RunRecord
from ddp_viz.model.watched import (
    arrivals,
    averages_identical,
    last_to_arrive,
    latest_full,
    places,
    seen_steps,
    step_time,
    stragglers,
)

MAX_PARAMS = 8  # rows of the gradient table; a bigger model shows its first ones and a count


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.1f} ms"


class _Builder(StepFrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(rec, cursor, progress, ctx)
        self.where = places(rec)
        self.room = ctx.width - 2 * self.pad
        self.lh = self.small.px * LINE

    def build(self) -> StageFrame:
        hosts = sorted({p.host for p in self.where.values()})
        right = [f"{self.rec.world_size} ranks on {', '.join(hosts)}", f"{len(hosts)} host(s)"]
        seen = seen_steps(self.rec)
        y = self.pad * 0.6
        for line in self.title(
            f"Your run · step {self.cursor.step + 1} of {seen}", right, self.t.muted
        ):
            self.emit(line, y)
            y += line.height
        y = self.ranks_table(y + self.pad * 0.3)
        y = self.waits(y + self.pad * 0.3)
        y = self.buckets(y + self.pad * 0.3)
        self.gradients(y + self.pad * 0.5)
        return self.frame

    def para(self, y: float, text: str, color: str, key: str = "", value: float | None = None,
             bold: bool = False) -> float:  # fmt: skip
        font = Font(self.small.px, bold=bold)
        for i, part in enumerate(wrap_lines(text, font, self.room, self.width)):
            if y + self.lh > self.ctx.height:
                return y
            k = key if i == 0 else ""
            self.text(self.pad, y, part, font, color, key=k, value=value if k else None)
            y += self.lh
        return y

    # --- who runs where, and how fast -------------------------------------------------------
    def ranks_table(self, top: float) -> float:
        t, f, s = self.t, self.small, self.cursor.step
        heads = ["rank", "host", "pid", "step time", "reached all-reduce"]
        rows = []
        st = self.step
        got = arrivals(st) if st is not None else {}
        first = min(got.values()) if got else None
        for r in range(self.rec.world_size):
            place = self.where.get(r)
            arrived = f"+{_ms(got[r] - first)}" if r in got and first is not None else "—"
            rows.append(
                [f"rank {r}", place.host if place else "—", str(place.pid) if place else "—",
                 _ms(step_time(self.rec, s, r)), arrived]
            )  # fmt: skip
        widths = [
            max(self.width(row[i], f) for row in [heads, *rows]) + f.px * 1.2
            for i in range(len(heads))
        ]
        if sum(widths) > self.room:  # narrow stage: host and pid go first
            keep = [0, 3, 4]
            heads, rows = [heads[i] for i in keep], [[row[i] for i in keep] for row in rows]
            widths = [widths[i] for i in keep]
        y = top
        for ri, row in enumerate([heads, *rows]):
            if y + self.lh > self.ctx.height:
                return y
            x = self.pad
            for ci, cell in enumerate(row):
                color = t.muted if ri == 0 else (t.rank_color(ri - 1) if ci == 0 else t.text)
                key = f"rank{ri - 1}.{heads[ci].replace(' ', '_')}" if ri and ci else ""
                self.text(x, y, cell, f, color, key=key)
                x += widths[ci]
            y += self.lh
        return y

    def waits(self, top: float) -> float:
        t, st = self.t, self.step
        y = top
        found = last_to_arrive(st) if st is not None else None
        if found is not None:
            rank, late = found
            y = self.para(
                y,
                f"this step the others waited {_ms(late)} for rank {rank}, the last to reach "
                "the all-reduce",
                t.text,
                "straggler",
                late,
            )
        counts = stragglers(self.rec, self.cursor.step)
        if counts:
            n = sum(counts.values())
            parts = ", ".join(f"rank {r} × {c}" for r, c in counts.most_common())
            y = self.para(
                y,
                f"last to the all-reduce in steps 1–{self.cursor.step + 1}: {parts} (of {n})",
                t.muted,
                "stragglers",
            )
        return y

    # --- the buckets' all-reduces, every rank on one clock ----------------------------------
    def buckets(self, top: float) -> float:
        st, t, f = self.step, self.t, self.small
        if st is None:
            return top
        spans = {
            r: [(b["launched"], b["finished"], b["index"]) for b in rs.bucket_spans
                if b.get("launched") is not None and b.get("finished") is not None]
            for r, rs in st.ranks.items()
        }  # fmt: skip
        starts = [a for v in spans.values() for a, _, _ in v]
        if not starts or top + self.lh * (len(spans) + 2) > self.ctx.height:
            return top
        t0, t1 = min(starts), max(b for v in spans.values() for _, b, _ in v)
        width = max(t1 - t0, 1e-6)
        y = self.para(
            top,
            f"each bucket's all-reduce, one clock for every rank ({_ms(t1 - t0)} from the "
            "first to the last)",
            t.muted,
        )
        label_w = self.width("rank 00", f) + f.px
        room = self.room - label_w
        for r in sorted(spans):
            self.text(self.pad, y, f"rank {r}", f, t.rank_color(r))
            for a, b, index in spans[r]:
                x = self.pad + label_w + room * (a - t0) / width
                w = max(2.0, room * (b - a) / width)
                box = Rect(x, y + self.lh * 0.2, w, self.lh * 0.6)
                self.shape(
                    kind="rect",
                    box=box,
                    fill=t.rank_color(r),
                    fill_alpha=160,
                    key=f"bucket.{r}.{index}",
                )
            y += self.lh
        return y

    # --- gradients of the latest step captured in full ---------------------------------------
    def gradients(self, top: float) -> None:
        t, f = self.t, self.small
        st = latest_full(self.rec, self.cursor.step)
        if st is None:
            self.para(
                top, "no step captured in full yet (the capture budget decides which)", t.muted
            )
            return
        same = averages_identical(st)
        verdict = (
            # one line, even in projector type at 1280 px (the page says how: values or digests)
            "✓ averages identical on every rank, bit for bit"
            if same
            else "✗ the averaged gradients differ between ranks"
        )
        y = self.para(top, f"step {st.step + 1}, captured in full:", t.text, bold=True)
        y = self.para(y, verdict, t.ok if same else t.bad, "averages.identical", bold=True)
        names = self.rec.param_names
        ranks = sorted(st.ranks)
        heads = ["‖gradient‖", *[f"rank {r}" for r in ranks], "averaged"]
        name_w = (
            max([self.width(n, f) for n in names[:MAX_PARAMS]] + [self.width(heads[0], f)]) + f.px
        )
        col_w = self.width("0.00000e+00", f) + f.px * 0.6
        if name_w + col_w * (len(heads) - 1) > self.room or y + self.lh > self.ctx.height:
            return
        x = self.pad + name_w
        self.text(self.pad, y, heads[0], f, t.muted)
        for i, h in enumerate(heads[1:]):
            self.text(x + (i + 1) * col_w, y, h, f, t.muted, Align.RIGHT)
        y += self.lh
        for name in names[:MAX_PARAMS]:
            if y + self.lh > self.ctx.height:
                return
            self.text(self.pad, y, name, f, t.text)
            cells = [(f"rank{r}.local.{name}", st.ranks[r].local.get(name)) for r in ranks]
            cells.append((f"averaged.{name}", st.ranks[ranks[0]].averaged.get(name)))
            for i, (key, value) in enumerate(cells):
                norm = tensor_norm(value) if value is not None else None
                self.text(x + (i + 1) * col_w, y, fmt(norm), f, t.text, Align.RIGHT, key, norm)
            y += self.lh
        if len(names) > MAX_PARAMS:
            self.para(y, f"… and {len(names) - MAX_PARAMS} more parameters", t.muted)


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    return _Builder(record, cursor, progress, ctx).build()
