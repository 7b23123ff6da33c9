"""The data scene: which rank trained on which row, epoch by epoch, and what DDP made of it.

A grid of the dataset's rows (columns) by epoch (lines): each cell names the ranks that trained
on that row in that epoch, as the ranks reported it; a row given to two ranks (the sampler's
padding) is marked, a row no rank got (``drop_last``) is crossed out once its epoch is over, and
this step's rows are highlighted. Below: each rank's loss and local gradient for this step, DDP's
average against one process on this step's rows (each once), and the parameters after the step.
Every number is recorded; nothing here re-runs a sampler.
"""

from __future__ import annotations

from ddp_viz.kinds.data_split.shares import EpochShare, epochs
from ddp_viz.model.dataspec import DataSpec
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.frame import Align, Font, Rect, StageFrame, fmt, wrap_lines
from ddp_viz.model.reference import values_policy
from ddp_viz.model.scenes.base import LINE, Line, StepFrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.sharing import why_average_differs
from ddp_viz.model.timeline import PHASES, Cursor, RunRecord, display_value

TITLES = {
    "shards": "1 · the sampler hands out rows",
    "local": "2 · each rank's gradient on its rows",
    "allreduce": "3 · DDP's average against one process",
    "step": "4 · the same step on every rank",
}


class _Builder(StepFrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(rec, cursor, progress, ctx)
        self.rows = len(rec.scenario.get("x", []))
        self.names = [p.name for p in rec.params]

    def build(self) -> StageFrame:
        title = self.plan_title()
        # a title on two lines (a projector's type does not shrink under 24 px) takes one of
        # the caption's
        caption = self.caption(PHASES[self.phase], self.step is None, 3 - len(title))
        y = self.pad * 0.6
        for line in title + caption:
            self.emit(line, y)
            y += line.height
        if self.step is None:
            return self.frame
        shares = epochs(self.rec, self.cursor.step)
        y = self.grid(y + self.pad * 0.4, shares)
        self.numbers(y + self.pad * 0.6)
        return self.frame

    def plan_title(self) -> list[Line]:
        rec, st = self.rec, self.step
        epoch = st.ranks[min(st.ranks)].epoch if st and st.ranks else 0
        total = rec.steps_total()
        phase = TITLES[PHASES[self.phase]]
        left = f"Step {self.cursor.step + 1} of {total} · epoch {epoch + 1} · {phase}"
        data = rec.scenario.get("data", {})
        if data.get("sampler") == "distributed":
            right = (
                f"DistributedSampler: shuffle {'on' if data.get('shuffle') else 'off'}, "
                f"drop_last {'on' if data.get('drop_last') else 'off'}, "
                f"set_epoch {'on' if data.get('set_epoch') else 'off'}"
            )
        else:
            right = "contiguous blocks"
        return self.title(left, [right], self.t.muted)

    # --- the grid ----------------------------------------------------------------------------
    def grid(self, top: float, shares: list[EpochShare]) -> float:
        t, f = self.t, self.small
        lh = f.px * LINE
        last_epoch = shares[-1].epoch if shares else 0
        label_w = self.width(f"epoch {max(10, last_epoch + 1)}", f) + self.pad
        cell = max(self.width("0,1", f), self.width(f"{self.rows}", f)) + f.px * 0.6
        cols_room = self.ctx.width - 2 * self.pad - label_w
        cell = min(cell * 1.6, max(cell, cols_room / max(1, self.rows)))
        x0 = self.pad + label_w
        self.text(self.pad, top, "row", f, t.muted)
        for i in range(self.rows):
            self.text(x0 + (i + 0.5) * cell, top, str(i + 1), f, t.muted, Align.CENTER)
        y = top + lh
        # an epoch is over once a later one started, or once it has had all its steps
        per_epoch = self.steps_per_epoch()
        at_end = bool(shares) and len(shares[-1].steps) >= per_epoch
        fit = self.epochs_that_fit(y, lh)  # the "not shown" line takes one of them
        shown = shares if len(shares) <= fit else shares[-(fit - 1) :]
        if len(shown) < len(shares):  # a long run: its latest epochs, and the rank rows below
            hidden = len(shares) - len(shown)
            words = "epoch 1" if hidden == 1 else f"epochs 1–{hidden}"
            self.text(self.pad, y, f"… {words} not shown", f, t.muted)
            y += lh
        for share in shown:
            self.text(self.pad, y, f"epoch {share.epoch + 1}", f, t.text)
            over = share.epoch < last_epoch or at_end
            for i in range(self.rows):
                box = Rect(x0 + i * cell + 1, y, cell - 2, lh * 0.95)
                who = share.takers.get(i, [])
                this_step = [r for r, s in who if s == self.cursor.step]
                if this_step and (self.phase > 0 or self.progress >= 0.5):
                    self.shape(kind="rect", box=box, fill=t.highlight, key=f"now.{i}")
                if len(who) > 1:
                    self.shape(
                        kind="rect", box=box, stroke=t.bad, width=2, key=f"repeat.{share.epoch}.{i}"
                    )
                if who:
                    label = ",".join(str(r) for r, _ in who)
                    color = t.bad if len(who) > 1 else t.rank_color(who[0][0])
                    self.text(box.cx, y, label, f, color, Align.CENTER)
                elif over:
                    self.text(
                        box.cx, y, "×", f, t.muted, Align.CENTER, key=f"dropped.{share.epoch}.{i}"
                    )
            y += lh
        notes = []
        if any(s.repeated() for s in shares):
            notes.append(
                "red: a row two ranks trained on in the same epoch (the sampler's padding)"
            )
        finished = shares[:-1] + (shares[-1:] if at_end else [])
        if any(s.missing(self.rows) for s in finished):
            notes.append("×: a row no rank got in that epoch (drop_last)")
        for line in wrap_lines(" · ".join(notes), f, self.ctx.width - 2 * self.pad, self.width)[:2]:
            self.text(self.pad, y, line, f, t.muted)
            y += lh
        return y

    def epochs_that_fit(self, top: float, lh: float) -> int:
        """Grid lines that leave room below for the notes, each rank's line and DDP's numbers
        (a few wrapped lines); one of them says how many earlier epochs are left out."""
        below = 2 + self.rec.world_size + 6
        return max(3, int((self.ctx.height - top) // lh) - below)

    def steps_per_epoch(self) -> int:
        try:
            spec = DataSpec.from_mapping(self.rec.scenario.get("data", {}))
        except ScenarioError:
            return 1
        return spec.steps_per_epoch(self.rows, max(1, self.rec.world_size))

    # --- the numbers -------------------------------------------------------------------------
    def values(self, grads: dict | None) -> str:
        if not grads:
            return "—"
        return "  ".join(f"{n} {fmt(display_value(grads.get(n)))}" for n in self.names)

    def numbers(self, top: float) -> None:
        st, t, f = self.step, self.t, self.small
        assert st is not None
        lh = f.px * LINE
        y = top
        if self.phase >= 1:
            for r, rs in sorted(st.ranks.items()):
                if y + lh > self.ctx.height:
                    break
                rows = ", ".join(str(i + 1) for i in rs.rows)
                head = f"rank {r} · rows {rows} · loss "
                self.text(self.pad, y, head, f, t.rank_color(r))
                x = self.pad + self.width(head, f)
                loss = self.text(x, y, fmt(rs.loss), f, t.text, key=f"rank{r}.loss", value=rs.loss)
                if not rs.values:  # a long run's step: no gradients to show
                    y += lh
                    continue
                x = loss.box.right + self.width("  ∇ ", f)
                self.text(loss.box.right, y, "  ∇ ", f, t.muted)
                right = self.ctx.width - self.pad
                for n in self.names:
                    v = display_value((rs.local or {}).get(n))
                    if x + self.width(f"{n} {fmt(v)}", f) > right:  # the rest on a line below
                        y, x = y + lh, self.pad + self.width("rank 0 · ", f)
                    label = self.text(x, y, f"{n} ", f, t.muted)
                    num = self.text(
                        label.box.right, y, fmt(v), f, t.text, key=f"rank{r}.local.{n}", value=v
                    )
                    x = num.box.right + f.px * 0.6
                y += lh
        bold = Font(f.px, bold=True)
        if self.phase >= 1 and not st.has_values:  # a long run's step: its losses alone
            self.para(y, f"Not recorded at step {st.step + 1}. {values_policy()}", f, t.muted)
            return
        if self.phase >= 2:
            avg = st.ranks[min(st.ranks)].averaged
            y = self.para(y, "DDP's average: " + self.values(avg), f, t.text)
            ref = st.reference
            if ref is not None:
                one = "one process, this step's rows once each: "
                y = self.para(y, one + self.values(ref.full_batch_grads), f, t.text)
                same = st.average_is_full_batch()
                why = why_average_differs(self.rec, st)
                verdict = "✓ equal" if same else "✗ different: " + (why or "rounding")
                y = self.para(y, verdict, bold, t.ok if same else t.bad)
        if self.phase >= 3 and self.progress >= 1.0:
            agree = st.ranks_agree()
            params = st.ranks[min(st.ranks)].params
            ok = "✓ all ranks equal" if agree else "✗ ranks differ"
            self.para(
                y,
                f"after optimizer.step(): {self.values(params)}  ·  {ok}",
                f,
                t.ok if agree else t.bad,
            )

    def para(self, y: float, text: str, font: Font, color: str) -> float:
        """Wrapped lines from ``y`` while they fit on the stage; returns the next line's top."""
        lh = font.px * LINE
        for line in wrap_lines(text, font, self.ctx.width - 2 * self.pad, self.width):
            if y + lh > self.ctx.height:
                break
            self.text(self.pad, y, line, font, color)
            y += lh
        return y


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """The rows by epoch and rank, from what the ranks' samplers handed them."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    return _Builder(record, cursor, progress, ctx).build()
