"""The accumulation scene: one optimizer step's micro-batches, ``.grad`` after each backward,
and whether DDP's comm hook all-reduced in it.

A table per rank (lines: the rows, ``.grad`` of each parameter, "all-reduced?"; columns: the
micro-batches), revealed micro-batch by micro-batch as the backward passes happened. Below it:
how many all-reduces the hook counted this step, DDP's ``.grad`` at ``optimizer.step()``
against one process taking the step's rows as one batch, and the parameters after the step.
Every number is a recorded one; the counts come from the hook, never from the scenario.
"""

from __future__ import annotations

import math

from ddp_viz.kinds.accumulation.counts import allreduces, synced_backwards
from ddp_viz.kinds.accumulation.events import MicroStep
from ddp_viz.kinds.accumulation.record import micro_of
from ddp_viz.kinds.accumulation.scene_parts import (
    MIN_BELOW,
    PLANS,
    Paragraph,
    Plan,
    close_in_value,
    visible_micro,
)
from ddp_viz.model.frame import Align, Font, Rect, StageFrame, fmt, wrap_lines
from ddp_viz.model.scenes.base import LINE, Line, StepFrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.sharing import step_rows, why_average_differs
from ddp_viz.model.tensors import tensor_norm
from ddp_viz.model.timeline import (
    PHASES,
    Cursor,
    RunRecord,
    display_value,
)

TITLES = {
    "shards": "1 · each rank's micro-batches",
    "local": "2 · backward after backward",
    "allreduce": "3 · what DDP synchronised",
    "step": "4 · one optimizer.step()",
}
NO_MICRO = "One micro-batch a step: set Micro-batches above 1 to accumulate."
SHORT = {  # the same on a narrow stage in large type
    "shards": "micro-batches",
    "local": "backward × k",
    "allreduce": "all-reduces",
    "step": "optimizer.step()",
}
PLACEMENT = {
    "none": "no no_sync()",
    "forward_and_backward": "no_sync() around forward + backward",
    "backward_only": "no_sync() around backward only",
}


class _Builder(StepFrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(rec, cursor, progress, ctx)
        self.names = [p.name for p in rec.params]
        train = rec.scenario.get("train", {})
        self.k = int(train.get("accumulate", 1))
        self.placement = str(train.get("no_sync", "none"))
        self.scaled = bool(train.get("scale_loss", True))
        # a big model: one line with the norm over every parameter instead of one per tensor
        self.lines = self.names if len(self.names) <= 3 else ["‖all‖"]

    # --- plan --------------------------------------------------------------------------------
    def build(self) -> StageFrame:
        title = self.plan_title()
        ranks = self.step.ranks if self.step is not None else {}
        if ranks and not any(self.micro(r) for r in ranks):  # a run without micro-batches
            font = Font(self.base)
            words = wrap_lines(NO_MICRO, font, self.ctx.width - 2 * self.pad, self.width)
            self.place([*title, *(Line(line, font, self.t.muted) for line in words)])
            return self.frame
        if not ranks:  # the step, or every rank's part of it, has not arrived yet
            self.place(title + self.caption(PHASES[self.phase], True, 2))
            return self.frame
        room = self.ctx.height - MIN_BELOW * self.small.px * LINE
        plan = next((p for p in PLANS if self.height(title, p) <= room), PLANS[-1])
        self.grow(title, plan)
        caption = self.caption(PHASES[self.phase], False, 9)
        y = self.place(title + (caption if len(caption) <= plan.caption else []))
        y = self.table(y + self.pad * 0.4, plan)
        self.bottom(y + self.pad * 0.4, plan)
        return self.frame

    def grow(self, title: list[Line], plan: Plan) -> None:
        """On a big stage, larger type for the table and what is below it, as long as the
        table and seven lines below it still fit."""
        base = self.small
        for scale in (1.4, 1.25, 1.1):
            self.small = Font(base.px * scale)
            lines_below = 7 * self.small.px * LINE
            wide = self.table_width() <= self.ctx.width - 2 * self.pad
            if wide and self.height(title, plan) + lines_below <= self.ctx.height:
                return
        self.small = base

    def table_width(self) -> float:
        f = self.small
        labels = [self.label(n) for n in self.lines] + ["all-reduced", "rank 0 · rows"]
        cell = max(self.width("−000.0", f), self.width("micro 00", f)) + f.px
        return max(self.width(text, f) for text in labels) + f.px + min(self.k, 4) * cell

    def place(self, lines: list[Line]) -> float:
        y = self.pad * 0.6
        for line in lines:
            self.emit(line, y)
            y += line.height
        return y

    def height(self, title: list[Line], plan: Plan) -> float:
        lh = self.small.px * LINE
        caption = self.caption(PHASES[self.phase], False, plan.caption)
        top = self.pad * 0.6 + sum(line.height for line in title + caption) + self.pad * 0.8
        per_rank = len(self.lines) + 2
        table = lh * (1 + per_rank * len(self.step.ranks if self.step else []))
        return top + table

    def plan_title(self) -> list[Line]:
        total = self.rec.steps_total()
        phase, n = PHASES[self.phase], self.cursor.step + 1
        left = f"Step {n} of {total} · {TITLES[phase]}"
        if self.width(left, Font(self.base * 1.2, bold=True)) > self.ctx.width - 2 * self.pad:
            left = f"Step {n}/{total} · {SHORT[phase]}"
        scale = f"loss ÷ {self.k}" if self.scaled else "loss not scaled"
        where = PLACEMENT.get(self.placement, self.placement)
        batches = f"{self.k} micro-batch" if self.k == 1 else f"{self.k} micro-batches"
        rights = [f"{batches} · {where} · {scale}", f"{batches} · {where}"]
        return self.title(left, rights, self.t.muted)

    # --- the table ---------------------------------------------------------------------------
    def shown(self, j: int) -> bool:
        """Has micro-batch ``j``'s backward happened yet at this point of the animation?"""
        if self.phase >= 2:
            return True
        if self.phase == 1:
            return self.progress >= j / max(1, self.k)
        return False

    def table(self, top: float, plan: Plan) -> float:
        t, f = self.t, self.small
        st = self.step
        assert st is not None
        lh = f.px * LINE
        labels = [self.label(n) for n in self.lines] + ["all-reduced", "rank 0 · rows"]
        label_w = max(self.width(text, f) for text in labels) + f.px
        cell = max(self.width("−000.0", f), self.width("micro 00", f)) + f.px
        room = self.ctx.width - 2 * self.pad - label_w
        columns = visible_micro(self.k, max(3, int(room // cell)))
        cell = min(cell * 1.8, room / len(columns))
        x0 = self.pad + label_w
        for c, j in enumerate(columns):
            label = "…" if j is None else f"micro {j + 1}"
            self.text(x0 + (c + 0.5) * cell, top, label, f, t.muted, Align.CENTER)
        y = top + lh
        block = len(self.lines) + 2
        ranks = sorted(st.ranks.items())
        below = (MIN_BELOW if self.phase >= 2 else 0) * lh
        fit = int((self.ctx.height - y - below) // (block * lh))
        if fit < len(ranks):  # many ranks on a small stage: the first ones and a count
            ranks = ranks[: max(1, int((self.ctx.height - y - below - lh) // (block * lh)))]
        current = min(self.k - 1, int(self.progress * self.k)) if self.phase == 1 else None
        if current is not None and current in columns:
            c = columns.index(current)
            box = Rect(x0 + c * cell, top, cell, lh * (1 + block * len(ranks)))
            self.shape(kind="rect", box=box, fill=t.highlight, key=f"now.micro{current}")
        for r, _ in ranks:
            if r != ranks[0][0]:
                edge = ((self.pad, y - lh * 0.08), (self.ctx.width - self.pad, y - lh * 0.08))
                self.shape(kind="line", points=edge, stroke=t.muted, stroke_alpha=160)
            name = f"rank {r} · rows" if plan.rows else f"rank {r}"
            self.text(self.pad, y, name, f, t.rank_color(r))
            for i, what in enumerate([*self.lines, "all-reduced"]):
                self.text(self.pad, y + (i + 1) * lh, self.label(what), f, t.muted)
            for c, j in enumerate(columns):
                if j is not None and j < len(self.micro(r)):
                    self.cells(r, j, x0 + (c + 0.5) * cell, y, plan)
            y += block * lh
        hidden = len(st.ranks) - len(ranks)
        if hidden:
            more = f"+ {hidden} more rank{'s' if hidden > 1 else ''}"
            if (
                self.width(more + " (all in ddp-viz run's report)", f)
                <= self.ctx.width - 2 * self.pad
            ):
                more += " (all in ddp-viz run's report)"
            self.text(self.pad, y, more, f, t.muted, key="more_ranks", value=float(hidden))
            y += lh
        return y

    def label(self, what: str) -> str:
        return what if what in ("all-reduced", "‖all‖") else f"{what}.grad"

    def micro(self, r: int) -> list[MicroStep]:
        """Rank ``r``'s micro-batches of the step shown."""
        return micro_of(self.rec, self.step.step, r) if self.step is not None else []

    def cells(self, r: int, j: int, cx: float, y: float, plan: Plan) -> None:
        t, f = self.t, self.small
        lh = f.px * LINE
        m = self.micro(r)[j]
        if plan.rows:
            rows = ", ".join(str(i + 1) for i in m.rows)
            self.text(cx, y, rows, f, t.text, Align.CENTER)
        y += lh
        if not self.shown(j):
            return
        for name in self.lines:
            if name == "‖all‖":
                v = math.sqrt(sum(tensor_norm(g) ** 2 for g in m.grads.values()))
            else:
                v = display_value(m.grads.get(name))
            key = f"rank{r}.micro{j}.grad.{name}"
            self.text(cx, y, fmt(v), f, t.text, Align.CENTER, key=key, value=v)
            y += lh
        synced = bool(m.allreduced)
        self.text(
            cx,
            y,
            "yes" if synced else "no",
            Font(f.px, bold=synced),
            t.accent if synced else t.muted,
            Align.CENTER,
            key=f"rank{r}.micro{j}.allreduced",
            value=float(len(m.allreduced)),
        )

    # --- below the table ---------------------------------------------------------------------
    def counts(self) -> tuple[str, float | None]:
        """The line about the all-reduces, and the number of hook calls when every rank
        made the same. Backward passes that synchronised are what k compares with; with more
        than one bucket each of them is several all-reduces."""
        assert self.step is not None
        ranks = sorted(self.step.ranks.items())
        synced = {r: synced_backwards(self.micro(r)) for r, _ in ranks}
        calls = {r: allreduces(self.micro(r)) for r, _ in ranks}
        if len(set(synced.values())) == 1 and len(set(calls.values())) == 1:
            n, c = synced[ranks[0][0]], calls[ranks[0][0]]
            text = f"{n} of {self.k} backward passes all-reduced on every rank"
            if c != n:
                text += f" ({c} bucket all-reduces)"
            return text, c
        each = " · ".join(f"rank {r}: {synced[r]}" for r in synced)
        return f"backward passes that all-reduced, of {self.k}: {each}", None

    def note(self) -> str:
        assert self.step is not None
        k = self.k
        micro = self.micro(min(self.step.ranks))
        n = synced_backwards(micro) or 0
        # the recorded flag: False in a backward that all-reduced all the same
        late = [m for m in micro if m.allreduced and not m.sync_at_backward]
        if late:
            return (
                f"require_backward_grad_sync was False in {len(late)} of these backward passes "
                "(recorded), yet they all-reduced: DDP had read it as True in the forward."
            )
        if n < k:
            return (
                f"no_sync() skipped {k - n} of {k} all-reduces: .grad added up the local "
                "gradients, and the last backward averaged the sum across the ranks."
            )
        return (
            "Every backward all-reduced: .grad after each is the running sum of the averages. "
            "The result is the same as with no_sync(); only the traffic differs."
        )

    def values(self, grads: dict | None) -> str:
        if not grads:
            return "—"
        return "  ".join(f"{self.name(n)} {fmt(display_value(grads.get(n)))}" for n in self.names)

    def name(self, n: str) -> str:
        """A one-value tensor by its name; a bigger one by its norm, marked ‖·‖."""
        info = next((p for p in self.rec.params if p.name == n), None)
        return n if info is None or info.numel == 1 else f"‖{n}‖"

    def paragraphs(self, plan: Plan) -> list[Paragraph]:
        """The lines below the table for this phase, in reading order."""
        st, t, f = self.step, self.t, self.small
        if st is None or self.phase < 2:
            return []
        bold = Font(f.px, bold=True)
        text, count = self.counts()
        out = [
            # the count is this phase's point; at the step, the parameters are
            Paragraph(
                text + " (counted by DDP's comm hook)",
                bold,
                t.text,
                5 if self.phase == 2 else 3,
                "allreduces",
                count,
            ),
            Paragraph(self.note(), f, t.muted, 4 if self.phase == 2 else 2, most=plan.note),
        ]
        avg = st.ranks[min(st.ranks)].averaged
        ref = st.reference
        vs = "full_batch" if ref is not None else ""
        grad = f"DDP's .grad at optimizer.step(): {self.values(avg)}"
        out.append(Paragraph(grad, f, t.text, 2, group=vs))
        if ref is not None:
            seen = set(step_rows(self.rec, st))
            spans = len({e for e, _ in seen})
            source = f" from {spans} epochs" if spans > 1 else ""
            one = f"one process, these {len(seen)} rows{source} as one batch: "
            out.append(Paragraph(one + self.values(ref.full_batch_grads), f, t.text, 2, group=vs))
            same = st.average_is_full_batch()
            why = why_average_differs(self.rec, st)
            verdict = "✓ equal" if same else "✗ different: " + (why or "rounding")
            out.append(Paragraph(verdict, bold, t.ok if same else t.bad, 3, "full_batch", group=vs))
        if self.phase >= 3 and self.progress >= 1.0:
            agree = st.ranks_agree()
            ok = "✓ all ranks equal" if agree else "✗ ranks differ"
            params = st.ranks[min(st.ranks)].params
            line = f"after optimizer.step(): {self.values(params)}  ·  {ok}"
            out.append(Paragraph(line, f, t.ok if agree else t.bad, 7, "agree"))
            solo = ref.one_process_params if ref is not None else {}
            if solo and params:
                n = self.cursor.step + 1
                same = close_in_value(params, solo)
                verdict = "✓ the same" if same else "✗ not the same"
                line = (
                    f"one process, one batch a step, after {n} step{'s' if n > 1 else ''}: "
                    f"{self.values(solo)}  ·  {verdict}"
                )
                out.append(Paragraph(line, f, t.ok if same else t.bad, 6, "one_process"))
        return out

    def bottom(self, top: float, plan: Plan) -> None:
        """The paragraphs that fit, the most important first, drawn in reading order."""
        room = self.ctx.width - 2 * self.pad
        wrapped = [
            (p, lines if len(lines) <= p.most else [])  # whole, or not at all
            for p in self.paragraphs(plan)
            for lines in [wrap_lines(p.text, p.font, room, self.width)]
        ]
        left = self.ctx.height - top
        keep: set[int] = set()
        tried: set[int] = set()
        for i in sorted(range(len(wrapped)), key=lambda i: -wrapped[i][0].priority):
            if i in tried:
                continue
            group = wrapped[i][0].group
            members = [j for j, (p, _) in enumerate(wrapped) if p.group == group] if group else [i]
            tried.update(members)
            need = sum(len(wrapped[j][1]) * wrapped[j][0].font.px * LINE for j in members)
            if all(wrapped[j][1] for j in members) and need <= left:
                keep.update(members)
                left -= need
        y = top
        for i, (p, lines) in enumerate(wrapped):
            if i not in keep:
                continue
            for n, line in enumerate(lines):
                key = p.key if n == 0 else ""
                value = p.value if key else None
                self.text(self.pad, y, line, p.font, p.color, key=key, value=value)
                y += p.font.px * LINE


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """The micro-batches by rank: ``.grad`` after each backward and whether it all-reduced."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    return _Builder(record, cursor, progress, ctx).build()
