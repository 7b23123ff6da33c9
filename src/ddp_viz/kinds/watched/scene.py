"""The dashboard of a watched run (your own script under ``ddp-viz watch``), at one step.

Per rank: host, pid, step time and when it reached the all-reduce; which rank the others
waited for, this step and so far; each bucket's all-reduce on one clock for every rank; and
for the latest step captured in full, every parameter's gradient norm per rank against the
average, with whether the averages are identical on every rank. Every number is recorded.
"""

from __future__ import annotations

import math

from ddp_viz.kinds.watched import around
from ddp_viz.kinds.watched.agree import averages_identical
from ddp_viz.kinds.watched.attempts import findings
from ddp_viz.kinds.watched.checks import doctoring
from ddp_viz.kinds.watched.jumps import Jump, jumps, link_hint
from ddp_viz.kinds.watched.run import latest_full, places, seen_steps
from ddp_viz.kinds.watched.scene_buckets import BucketRows
from ddp_viz.kinds.watched.steps import (
    TensorRow,
    latest_step_time,
    mean_step_time,
    stragglers_with_waits,
    telling_rows,
)
from ddp_viz.kinds.watched.straggler import straggler_text
from ddp_viz.model.arrivals import arrivals, last_to_arrive
from ddp_viz.model.frame import (
    Align,
    Font,
    Link,
    Rect,
    StageFrame,
    cut_to_fit,
    fmt,
    wrap_lines,
)
from ddp_viz.model.scenes.base import LINE, StepFrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import Cursor, RunRecord, RunStatus

MAX_PARAMS = 8  # rows of the gradient table: the most telling ones; the Run tab lists all
MAX_BUCKETS = 8  # rows of the buckets; the Run tab lists all
MAX_LAST = 3  # ranks named in "last to the all-reduce …", most often last first
MAX_DOCTOR = 6  # lines of the doctor's findings (the --no-window report has all, with stacks)
WAITING = "Waiting for your script's first step (torchrun is starting its ranks)…"
# a run that ended with no step: its ranks failed or stopped before their first DDP forward
NO_STEP = "No step of your script reached ddp-viz: its ranks ended before their first forward."


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
        where = f"step {self.cursor.step + 1} of {seen} reported" if seen else "no step reported"
        for line in self.title(f"Your run · {where}", right, self.t.muted):
            self.emit(line, y)
            y += line.height
        y = self.doctor(y + self.pad * 0.2)
        y = self.ranks_table(y + self.pad * 0.3)
        if not seen:  # the ranks joined; their first step has not come (yet, if still running)
            ended = self.rec.status is not RunStatus.RUNNING
            said = NO_STEP if ended else WAITING
            if ended:  # forwards that went around DDP, or backwards it never all-reduced
                d = doctoring(self.rec)
                said = around.no_step(d.around, d.never) or said
            self.para(y + self.pad * 0.3, said, self.t.muted, "before_first_step")
            return self.frame
        y = self.waits(y + self.pad * 0.3)
        # the gradients' verdict and a few rows keep their room below the buckets
        y = BucketRows(self, self, MAX_BUCKETS, self.lh * 4.5).draw(y + self.pad * 0.3)
        self.gradients(y + self.pad * 0.5)
        return self.frame

    def para(self, y: float, text: str, color: str, key: str = "", value: float | None = None,
             bold: bool = False) -> float:  # fmt: skip
        font = Font(self.small.px, bold=bold)
        parts = wrap_lines(text, font, self.room, self.width)
        # a word wider than the stage (a long call in an error, in projector type) is cut
        # where it must be, not drawn past the stage's edge
        fits = lambda part: self.width(part, font) <= self.room  # noqa: E731
        parts = [piece for part in parts for piece in cut_to_fit(part, fits)]
        fit = max(0, int((self.ctx.height - y) // self.lh))
        if 0 < fit < len(parts):  # the stage ends inside it: say so, never stop mid-sentence
            parts = [*parts[: fit - 1], self._ellipsis(parts[fit - 1], font)]
        for i, part in enumerate(parts):
            if y + self.lh > self.ctx.height:
                return y
            k = key if i == 0 else ""
            self.text(self.pad, y, part, font, color, key=k, value=value if k else None)
            y += self.lh
        return y

    def _ellipsis(self, line: str, font: Font) -> str:
        """``line`` with " …" at its end, words dropped until it fits the stage's width."""
        words = line.split()
        while len(words) > 1 and self.width(" ".join(words) + " …", font) > self.room:
            words.pop()
        return " ".join(words) + " …"

    # --- what went wrong, first: a hang, a lost rank, a NaN, a desync, a straggler -----------
    def doctor(self, top: float) -> float:
        """The findings, the diagnosis first; each one that names a step is a link to it (and
        to its rank's stack), and a line under the diagnosis says so."""
        found = findings(self.rec, stacks=False)
        verdict = straggler_text(self.rec)
        if verdict is not None and verdict.startswith("✗"):
            found.append(("straggler_verdict", [verdict]))
        leads = jumps(self.rec) if found else {}
        hint = found[0][0] in leads if found else False
        said_in_all = sum(len(said) for _, said in found)  # the report's lines
        total, told = said_in_all + hint, 0  # with the hint: the page's
        y, n = top, 0
        for f, (key, said) in enumerate(found):
            start = y
            for i, line in enumerate(said):
                if n == MAX_DOCTOR - 1 and total > MAX_DOCTOR:
                    left = said_in_all - told
                    more = f"… {left} more line(s) in the report (ddp-viz watch --no-window)"
                    self._lead(key, leads, start, y)
                    return self.para(y, more, self.t.muted, "doctor.more")
                bad = line.startswith("✗")
                color = self.t.bad if bad else self.t.text
                k = f"doctor.{key}" if i == 0 else ""
                y, n, told = self.para(y, line.strip(), color, k, bold=bad), n + 1, told + 1
            self._lead(key, leads, start, y)
            if f == 0 and hint:
                y, n = self.lead_hint(y, leads[key]), n + 1
        return y

    def _lead(self, key: str, leads: dict[str, Jump], top: float, bottom: float) -> None:
        j = leads.get(key)
        if j is not None and bottom > top:
            box = Rect(self.pad, top, self.room, bottom - top)
            self.frame.links.append(Link(box, f"doctor.{key}", f"Go to {link_hint(j)}"))

    def lead_hint(self, y: float, j: Jump) -> float:
        """Under the diagnosis: what a click on it does, and its lesson, a link of its own."""
        if y + self.lh > self.ctx.height:
            return y
        f = self.small
        said = f"↑ click it (or Tab, then Enter): {link_hint(j)}"
        if self.width(said, f) > self.room:  # a projector's narrow stage: the short words
            said = f"↑ click it: {link_hint(j)}"
        if self.width(said, f) > self.room:
            return self.para(y, said, self.t.muted, "doctor.hint")
        self.text(self.pad, y, said, f, self.t.muted, key="doctor.hint")
        if not j.lesson:
            return y + self.lh
        words = f"open the lesson on {j.lesson.replace('-', ' ')}"
        x = self.pad + self.width(said + " · ", f)
        if x + self.width(words, f) > self.pad + self.room:  # no room beside it: under it
            x, y = self.pad, y + self.lh
            if y + self.lh > self.ctx.height:
                return y
        else:
            self.text(x - self.width(" · ", f), y, " · ", f, self.t.muted)
        item = self.text(x, y, words, f, self.t.accent, key="doctor.lesson")
        b = item.box
        self.shape(kind="line", points=((b.x, b.bottom - 1), (b.right, b.bottom - 1)),
                   stroke=self.t.accent)  # fmt: skip
        self.frame.links.append(Link(b, "lesson", f"Open the lesson: {j.lesson}", j.lesson))
        return y + self.lh

    # --- who runs where, and how fast -------------------------------------------------------
    def ranks_table(self, top: float) -> float:
        t, f, s = self.t, self.small, self.cursor.step
        heads = ["rank", "host", "pid", "step time", "mean step", "reached all-reduce"]
        rows = []
        st = self.step
        got = arrivals(st) if st is not None else {}
        first = min(got.values()) if got else None
        for r in range(self.rec.world_size):
            place = self.where.get(r)
            arrived = f"+{_ms(got[r] - first)}" if r in got and first is not None else "—"
            rows.append(
                [f"rank {r}", place.host if place else "—", str(place.pid) if place else "—",
                 _ms(latest_step_time(self.rec, s, r)), _ms(mean_step_time(self.rec, s, r)),
                 arrived]
            )  # fmt: skip
        widths = [
            max(self.width(row[i], f) for row in [heads, *rows]) + f.px * 1.2
            for i in range(len(heads))
        ]
        # a narrow stage (a projector's with the side column open): host and pid go first,
        # then the mean step; who reached the all-reduce when is the column that stays whole
        for keep in ([0, 1, 2, 3, 4, 5], [0, 3, 4, 5], [0, 3, 5], [0, 5]):
            if sum(widths[i] for i in keep) - f.px * 1.2 <= self.room:
                break
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
        found = last_to_arrive(st, self.rec.world_size) if st is not None else None
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
        # from step 2, as the straggler verdict counts (step 1's one-off costs left out): one
        # count for one thing on the page, in the headline and in the terminal
        found_all = stragglers_with_waits(self.rec, self.cursor.step, first=1)
        if found_all:
            n = sum(x.count for x in found_all)
            parts = "; ".join(
                f"rank {x.rank} × {x.count}, mean wait {_ms(x.mean_wait_s)}"
                for x in found_all[:MAX_LAST]
            )
            if len(found_all) > MAX_LAST:  # eight ranks took four lines of a projector's stage
                more = len(found_all) - MAX_LAST
                parts += f"; {more} other rank{'s' if more > 1 else ''} fewer times"
            y = self.para(
                y,
                f"last to the all-reduce in steps 2–{self.cursor.step + 1} ({n}): {parts}",
                t.muted,
                "stragglers",
                found_all[0].mean_wait_s,
            )
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
        every = len(self.rec.param_names)
        line = max(self.lh, f.px * self.line)  # a row's step, and its text box's height
        room = int((self.ctx.height - y - (line - self.lh)) // self.lh) - 1  # the heads' line
        many = every > min(MAX_PARAMS, room)
        shown = min(MAX_PARAMS, room - 1 if many else room)
        if shown < 1:  # no room for a row: where they are, if a line fits
            self.para(y, f"{every} tensors' norms: in the Run tab (Ctrl+T)", t.muted,
                      "tensors.more")  # fmt: skip
            return
        rows = telling_rows(self.rec, st, shown)  # only the rows shown are built
        ranks = sorted(st.ranks)
        name_w = max([self.width(r.name, f) for r in rows] + [self.width("‖gradient‖", f)])
        col_w = self.width("0.00000e+00", f) + f.px * 0.6
        # a column per rank; when eight ranks' do not fit, the smallest and largest rank's
        per_rank = name_w + f.px + col_w * (len(ranks) + 2) <= self.room
        heads = ["‖gradient‖", *([f"rank {r}" for r in ranks] if per_rank else
                                 ["smallest", "largest"]), "averaged", "spread"]  # fmt: skip
        if not rows or name_w + f.px + col_w * (len(heads) - 1) > self.room:
            self.para(y, f"{every} tensors' norms: in the Run tab (Ctrl+T)", t.muted,
                      "tensors.more")  # fmt: skip
            return
        x = self.pad + name_w + f.px
        self.text(self.pad, y, heads[0], f, t.muted)
        for i, h in enumerate(heads[1:]):
            self.text(x + (i + 1) * col_w, y, h, f, t.muted, Align.RIGHT)
        y += self.lh
        for row in rows:
            self.text(self.pad, y, row.name, f, t.text if row.identical is not False else t.bad)
            for i, (key, norm) in enumerate(_norm_cells(row, ranks, per_rank)):
                self.text(x + (i + 1) * col_w, y, fmt(norm), f, t.text, Align.RIGHT, key, norm)
            y += self.lh
        if many:
            self.para(
                y,
                f"{len(rows)} of {every} tensors, widest spread first"
                " · all in the Run tab (Ctrl+T)",
                t.muted,
                "tensors.more",
            )


def _norm_cells(row: TensorRow, ranks: list[int], per_rank: bool) -> list[tuple[str, float]]:
    """A tensor row's numbers: each rank's local norm (or the smallest and largest of them),
    the average's, the spread; keyed for tests and exports."""
    if per_rank:
        cells = [(f"rank{r}.local.{row.name}", row.local[r]) for r in ranks]
    else:
        finite = [v for v in row.local.values() if math.isfinite(v)]
        low, high = (min(finite), max(finite)) if finite else (math.nan, math.nan)
        cells = [(f"smallest.{row.name}", low), (f"largest.{row.name}", high)]
    return [*cells, (f"averaged.{row.name}", row.averaged), (f"spread.{row.name}", row.spread)]


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """Per rank: the step's time and whom the others waited for; every bucket's all-reduce on
    one clock; gradient norms per rank against the average; the doctor's diagnosis."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    return _Builder(record, cursor, progress, ctx).build()
