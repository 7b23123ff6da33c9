"""The buckets scene: when each gradient became ready, and when each bucket's all-reduce ran.

One step of a real run on a shared time axis. Per rank: ``loss.backward()`` as a bar, a tick
when each parameter's gradient was accumulated (coloured by its bucket), and beneath it one row
per bucket with its all-reduce from launch (DDP's comm hook entered) to finish (the future
returned). Below: the bucket layout of step 1 beside the rebuilt one, and each parameter's
gradient norm, local per rank against the average. Every time and number is recorded;
``progress`` only moves the sweep that reveals recorded ticks and bars in the order they
happened.

Phases (the course's four, read for this picture): 0 the plan (this step's buckets), 1 backward
(ticks appear), 2 the all-reduces (bars grow), 3 the overlap, measured, and the norms.
"""

from __future__ import annotations

from ddp_viz.kinds.bucket_timeline.overlap import overlap, overlap_lines, ready_order
from ddp_viz.kinds.bucket_timeline.scene_panels import Panels
from ddp_viz.model.frame import Font, Rect, StageFrame, wrap_lines
from ddp_viz.model.scenes.base import LINE, Line
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import PHASES, Cursor, RankStep, RunRecord, RunStatus

TITLES = {
    "shards": "1 · this step's buckets",
    "local": "2 · backward: gradients become ready",
    "allreduce": "3 · each bucket's all-reduce",
    "step": "4 · how much overlapped",
}
MAX_ROW_EM = 2.2  # timeline rows grow into spare room up to this many ems


class _Builder(Panels):
    # --- the whole frame -------------------------------------------------------------------
    def build(self) -> StageFrame:
        title, caption, footer, ranks, lower = self.plan_fit()
        lh = self.small.px * LINE
        top = self.pad * 0.6 + sum(x.height for x in title + caption) + self.pad * 0.3
        bottom_y = self.ctx.height - self.pad * 0.6 - sum(x.height for x in footer)
        y = self.pad * 0.6
        for line in title + caption:
            self.emit(line, y)
            y += line.height
        fy = bottom_y
        for line in footer:
            self.emit(line, fy)
            fy += line.height
        if self.step is None or not ranks:
            return self.frame
        spare = bottom_y - top - self.legend_height(ranks) - lower * lh - self.pad
        rows = self.timeline_rows(ranks)
        self.row = min(self.small.px * MAX_ROW_EM, max(self.min_row(), spare / max(rows, 1)))
        y = self.timeline(top, ranks)
        if lower:
            self.lower(
                Rect(self.pad, y + self.pad * 0.6, self.ctx.width - 2 * self.pad, lower * lh)
            )
        return self.frame

    def plan_fit(self) -> tuple[list[Line], list[Line], list[Line], list[int], int]:
        """What the stage has room for: the title, caption and footer, the ranks shown and the
        rows under the timeline.

        Every rank is shown as long as anything can give way (a projector at 1280×800 is a
        common classroom one): fewer rows of norms first (down to what the layouts need; the
        rest are counted), then the caption (all of it: half a sentence helps nobody), then
        the smallest type the theme allows, then each rank's buckets in one lane, then the
        rows under the timeline down to a title and two (the norms of eight tensors, in
        columns), then the footer's explanation (its muted lines: the lesson's text says it
        too), then what overlap cost backward (the CLI's report says it too), then each rank
        in one row (backward above its buckets), then no panels under the timeline, then the
        footer in one line, and only then fewer ranks (the legend says which are left out):
        8 ranks fit a projector at 1280×800 this way."""
        self.with_cost = True
        title, caption, footer = self.plan_title(), self.plan_caption(), self.plan_footer()
        ranks = self.ranks_with_timings()
        lower = self.lower_rows()

        def room() -> float:
            heights = sum(x.height for x in title + caption + footer)
            return self.ctx.height - self.pad * 1.5 - heights

        def need() -> float:
            rows = self.legend_height(ranks) + self.timeline_rows(ranks) * self.min_row()
            return rows + lower * self.small.px * LINE + self.pad

        keep = self.lower_min_rows()
        while need() > room():
            if lower > keep:
                lower -= 1
            elif caption:
                caption = []
            elif self.base > self.ctx.min_px:
                self.base = self.ctx.min_px
                self.small = Font(self.ctx.min_px)
                title, footer = self.plan_title(), self.plan_footer()
            elif not self.compact:
                self.compact = True
            elif lower > 3:  # a title and two rows: the norms' grid holds eight tensors
                lower -= 1
            elif any(x.color == self.t.muted for x in footer):
                footer = [x for x in footer if x.color != self.t.muted]
            elif self.with_cost:  # the price of overlap: the CLI's report and the text say it too
                self.with_cost = False
                footer = [x for x in self.plan_footer() if x.color != self.t.muted]
            elif not self.dense:
                self.dense = True
            elif lower:  # every rank before the panels: the lesson's picture is the ranks'
                lower = 0
            elif len(footer) > 1:  # the footer's sentence in one line, cut with an ellipsis
                head = footer[0]
                whole = " ".join(x.text for x in footer)
                room_w = self.ctx.width - 2 * self.pad
                footer = [Line(self.fit(whole, room_w, head.font), head.font, head.color)]
            elif len(ranks) > 1:
                ranks = ranks[:-1]
            else:
                break
        return title, caption, footer, ranks, lower

    def ranks_with_timings(self) -> list[int]:
        if self.step is None:
            return []
        return [r for r in sorted(self.step.ranks) if overlap(self.step.ranks[r]) is not None]

    # --- text around the picture -----------------------------------------------------------
    def plan_title(self) -> list[Line]:
        rec = self.rec
        total = rec.steps_total()
        left = f"Step {self.cursor.step + 1} of {total}  ·  {TITLES[PHASES[self.phase]]}"
        cap = rec.scenario.get("ddp", {}).get("bucket_cap_mb")
        right = f"bucket_cap_mb = {cap:g}" if isinstance(cap, (int, float)) else ""
        return self.title(left, [right], self.t.muted)

    def plan_caption(self) -> list[Line]:
        return self.caption(PHASES[self.phase], self.step is None, 2)

    def plan_footer(self) -> list[Line]:
        st, t = self.step, self.t
        font, body = Font(self.base, bold=True), self.small
        room = self.ctx.width - 2 * self.pad
        if self.rec.status in (RunStatus.FAILED, RunStatus.CANCELLED):
            why = f"run {self.rec.status}: {self.rec.reason}"
            return [Line(w, font, t.bad) for w in wrap_lines(why, font, room, self.width)[:3]]
        if st is None or 0 not in st.ranks or overlap(st.ranks[0]) is None:
            return []
        rs0 = st.ranks[0]
        lines: list[tuple[str, Font, str]] = []
        if self.phase == 0:
            n = len(rs0.bucket_spans)
            what = "one bucket" if n == 1 else f"{n} buckets"
            lines.append((f"This step DDP all-reduces the gradients in {what}.", font, t.text))
            if self.cursor.step == 0:
                lines.append(
                    (
                        "With find_unused_parameters off, DDP cannot know before its first "
                        "backward the order the gradients will be ready in, so step 1 puts them "
                        "all in one bucket; before step 2 it rebuilds the buckets in the order "
                        "it saw.",
                        body,
                        t.muted,
                    )
                )
        elif self.phase == 1 and self.progress >= 1.0:
            order = " → ".join(ready_order(rs0))
            lines.append(("Ready, last layer first (rank 0): " + order, body, t.text))
        elif self.phase == 2 and self.progress >= 1.0:
            lines.append((self.launched_early(rs0), body, t.text))
        elif self.phase == 3:
            lines.append(
                (self.hidden_line(room, font), font, t.ok if self.any_hidden() else t.text)
            )
            # the run's price for it, measured after the loop (the run's last step shows it)
            if self.with_cost and self.cursor.step + 1 >= self.rec.steps_total():
                lines += [(line, body, t.text) for line in overlap_lines(self.rec)]
        out: list[Line] = []
        for text, f, color in lines:
            out += [Line(w, f, color) for w in wrap_lines(text, f, room, self.width)[:3]]
        return out

    def hidden_line(self, room: float, font: Font) -> str:
        """How much of each rank's all-reduce time backward hid, in one line: per rank while
        that fits, else the range over the ranks (8 ranks on a projector)."""
        st = self.step
        assert st is not None
        shares = {
            r: round(o.fraction * 100) for r in sorted(st.ranks) if (o := overlap(st.ranks[r]))
        }
        parts = "  ·  ".join(f"rank {r}: {p}%" for r, p in shares.items())
        for head in ("All-reduce time hidden behind backward:  ", "Hidden behind backward:  "):
            if self.width(head + parts, font) <= room:  # one line, so the norms keep a row
                return head + parts
        most = max(shares, key=lambda r: shares[r])
        low, high = min(shares.values()), shares[most]
        if low == high:
            return f"Hidden behind backward: {low}% on every rank"
        return f"Hidden behind backward: {low}–{high}% per rank (most: rank {most})"

    def launched_early(self, rs: RankStep) -> str:
        first = min(rs.bucket_spans, key=lambda b: b["launched"])
        waiting = sum(1 for _, at in rs.ready if float(at) > first["launched"])
        if waiting == 0:
            return (
                f"Rank 0's all-reduce (bucket {first['index']}) could only start after every "
                "gradient was ready: nothing left to overlap with."
            )
        return (
            f"Rank 0's first all-reduce (bucket {first['index']}) started while {waiting} "
            f"gradient(s) were still to be computed."
        )

    def any_hidden(self) -> bool:
        st = self.step
        assert st is not None
        return any((o := overlap(rs)) is not None and o.hidden_s > 0 for rs in st.ranks.values())


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """A timeline per rank: backward, the gradients as they became ready and each bucket's
    all-reduce."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    return _Builder(record, cursor, progress, ctx).build()
