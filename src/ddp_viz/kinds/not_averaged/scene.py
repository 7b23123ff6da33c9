"""The "what DDP does not average" scene: BatchNorm's buffers on every rank around each
forward, whether the comm hook averaged anything, and after the loop the reducer's error, the
cost of ``find_unused_parameters``, the checkpoint and the launch variables, all as recorded.

Phases: ``shards`` shows the buffers as the module's forward began (after DDP's broadcast, when
it broadcasts), ``local`` after the forward, ``allreduce`` what the comm hook averaged, and
``step`` whether the parameters agree after ``optimizer.step()``, then how the run ended.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddp_viz.kinds.not_averaged.record import part
from ddp_viz.kinds.not_averaged.report import checkpoint_lines, cost_line, count_line
from ddp_viz.model.frame import Align, Font, Rect, StageFrame, cut_to_fit, fmt, wrap_lines
from ddp_viz.model.launchspec import launch_line
from ddp_viz.model.reference import values_policy
from ddp_viz.model.scenes.base import LINE, StepFrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.sharing import why_average_differs
from ddp_viz.model.tensors import tensor_sample
from ddp_viz.model.timeline import PHASES, Cursor, RunRecord

SHOWN_VALUES = 4  # per buffer; a wider layer shows its first four and "…"
CUT = ("… more than fits here (ddp-viz run prints it all)", "… more than fits here", "…")


@dataclass
class _Entry:
    """One paragraph below the table: wrapped to the stage, cut when the stage is full."""

    text: str
    font: Font
    color: str
    key: str = ""
    value: float | None = None


class _Builder(StepFrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(rec, cursor, progress, ctx)
        ddp = rec.scenario.get("ddp", {})
        self.sync = bool(ddp.get("forward_sync_buffers", True))
        self.find = bool(ddp.get("find_unused_parameters", False))
        self.total = rec.steps_total()
        self.moment = "before" if PHASES[self.phase] == "shards" else "after"
        self.room = ctx.width - 2 * self.pad

    def build(self) -> StageFrame:
        n = self.cursor.step + 1
        sync, find = self.sync, self.find
        flags = [
            f"forward_sync_buffers={sync} · find_unused_parameters={find}",
            f"sync_buffers={sync} · find_unused={find}",
            f"sync={sync} · find_unused={find}",
        ]
        lines = self.title(f"Step {n} of {self.total}", flags, self.t.muted)
        lines += self.caption(PHASES[self.phase], self.step is None, 2)
        y = self.pad * 0.6
        for line in lines:
            self.emit(line, y)
            y += line.height
        if not self.at_end():  # the run's ending needs the room; the table was shown before
            y = self.buffer_table(y + self.pad * 0.4)
        y = self.paragraphs(y + self.pad * 0.4, self.entries())
        if PHASES[self.phase] in ("shards", "local"):
            self.drift_chart(y + self.pad, self.ctx.height - self.pad * 0.5)
        return self.frame

    def drift_chart(self, top: float, bottom: float) -> None:
        """Per step so far, the largest difference between the ranks' buffers as the forward
        began and after it: two bars and their recorded values, on one scale."""
        t, f = self.t, self.small
        lh = f.px * LINE
        world, state = self.rec.world_size, part(self.rec)
        shown = {}
        for s in range(min(self.cursor.step + 1, self.total)):
            pair = [state.agreement(s, world, m) for m in ("before", "after")]
            if all(p is not None for p in pair):
                shown[s] = [p.max_diff for p in pair if p is not None]
        if not shown or bottom - top < lh * 6:
            return
        self.text(self.pad, top, "largest difference between ranks, per step", f, t.text)
        colors = {"before": t.accent, "after": t.bad}
        x = self.pad
        for moment, label in (("before", "as the forward began"), ("after", "after it")):
            self.shape(
                kind="rect",
                box=Rect(x, top + lh * 1.25, f.px * 0.8, f.px * 0.8),
                fill=colors[moment],
            )
            x += f.px * 1.2
            self.text(x, top + lh, label, f, t.muted)
            x += self.width(label, f) + f.px
        base, high = bottom - lh, top + lh * 3.2  # bar bottoms, and the tallest bar's top
        slot = min(
            (self.ctx.width - 2 * self.pad) / max(1, self.total), self.width("0.0000", f) * 2.6
        )
        bar = slot * 0.36
        scale = max((v for pair in shown.values() for v in pair), default=0.0) or 1.0
        for s in range(self.total):
            cx = self.pad + (s + 0.5) * slot
            self.text(cx, base, f"step {s + 1}", f, t.muted, Align.CENTER)
            for i, (moment, value) in enumerate(
                zip(("before", "after"), shown.get(s, []), strict=False)
            ):
                h = (base - high) * value / scale
                left = cx - bar + i * bar
                self.shape(
                    kind="rect",
                    box=Rect(left, base - h, bar * 0.9, h),
                    fill=colors[moment],
                    key=f"bar.{moment}.{s}",
                )
                label = fmt(value, 2)
                self.text(
                    left + bar * 0.45,
                    base - h - lh,
                    label,
                    Font(f.px * 0.85),
                    t.text,
                    Align.CENTER,
                    f"drift.{moment}.{s}",
                    value,
                )

    # --- the buffers, one row per rank and buffer --------------------------------------------
    def buffer_table(self, top: float) -> float:
        got = {r: ev for (s, r), ev in part(self.rec).buffers.items() if s == self.cursor.step}
        if not got:
            return top
        t, f = self.t, self.small
        lh = f.px * LINE
        when = (
            "as the forward began"
            + (" (just after DDP's broadcast from rank 0)" if self.sync else "")
            if self.moment == "before"
            else "after the forward (each rank's own batch)"
        )
        head = Font(f.px, bold=True)
        y = top
        for line in wrap_lines(f"BatchNorm buffers {when}", head, self.room, self.width):
            self.text(self.pad, y, line, head, t.text)
            y += lh
        names = sorted({n for ev in got.values() for n in getattr(ev, self.moment)})
        label_w = max(self.width(f"rank {r}", f) for r in got) + f.px
        name_w = max(self.width(n, f) for n in names) + f.px
        col_w = self.width("−0.0000", f) + f.px * 0.8
        for r in sorted(got):
            values = getattr(got[r], self.moment)
            for i, name in enumerate(names):
                if y + lh > self.ctx.height:
                    return y
                if i == 0:
                    self.text(self.pad, y, f"rank {r}", f, t.rank_color(r))
                self.text(self.pad + label_w, y, name, f, t.muted)
                x = self.pad + label_w + name_w
                sample = tensor_sample(values.get(name, []))
                for j, v in enumerate(sample[:SHOWN_VALUES]):
                    key = f"rank{r}.{self.moment}.{name}.{j}"
                    self.text(x + (j + 1) * col_w, y, fmt(v), f, t.text, Align.RIGHT, key, v)
                if len(sample) > SHOWN_VALUES:
                    self.text(x + SHOWN_VALUES * col_w + f.px * 0.4, y, "…", f, t.muted)
                y += lh
        return y

    # --- what the gradients and parameters did, then how the run ended ------------------------
    def buffer_verdicts(self) -> list[_Entry]:
        """Whether the ranks' buffers agree at this moment, from the recorded values."""
        t, f = self.t, self.small
        state, world = part(self.rec), self.rec.world_size
        agreement = state.agreement(self.cursor.step, world, self.moment)
        if agreement is None:
            return []
        if agreement.same:
            whose = " (rank 0's, broadcast by DDP)" if self.moment == "before" else ""
            verdict, color = f"✓ identical on every rank{whose}", t.ok
        else:
            verdict = (
                f"✗ {', '.join(agreement.differing)} differ between ranks by up to "
                f"{fmt(agreement.max_diff)}"
            )
            color = t.bad
        return [_Entry(verdict, Font(f.px, bold=True), color, f"buffers.{self.moment}")]

    def entries(self) -> list[_Entry]:
        t, f = self.t, self.small
        st = self.step
        phase = PHASES[self.phase]
        launch = launch_line(self.rec)
        first = self.cursor.step == 0 and phase == "shards"
        out: list[_Entry] = [_Entry(launch, f, t.muted, "launch")] if first and launch else []
        out += [] if self.at_end() else self.buffer_verdicts()
        if st is not None and not st.has_values and phase in ("allreduce", "step"):
            # a long run's step: no gradients or parameters to compare, and no verdict either
            why = f"Not recorded at step {st.step + 1}. {values_policy()}"
            out.append(_Entry(why, f, t.muted, "values.policy"))
        elif st is not None and st.complete(self.rec.world_size) and phase in ("allreduce", "step"):
            none_averaged = all(not rs.buckets for rs in st.ranks.values())
            if none_averaged:
                out.append(
                    _Entry(
                        "✗ the comm hook never ran: the bucket never filled, because a parameter "
                        "got no gradient, so nothing was all-reduced and each rank keeps its own "
                        "gradient",
                        Font(f.px, bold=True),
                        t.bad,
                        "grads.unaveraged",
                    )
                )
            elif phase == "allreduce":
                buckets = max(len(rs.buckets) for rs in st.ranks.values())
                same = st.averaged_agree()
                if st.reference is not None and st.average_is_full_batch() is False:
                    why = why_average_differs(self.rec, st)
                    out.append(_Entry(f"✗ average ≠ full batch: {why}", f, t.text, "why"))
                out.append(
                    _Entry(
                        f"the comm hook all-reduced {buckets} bucket(s): "
                        + (
                            "✓ every rank holds the same average"
                            if same
                            else "✗ the averages differ"
                        ),
                        f,
                        t.ok if same else t.bad,
                        "grads.averaged",
                    )
                )
            if phase == "step":
                same = st.ranks_agree()
                out.append(
                    _Entry(
                        "after optimizer.step(): "
                        + (
                            "✓ parameters identical on every rank"
                            if same
                            else "✗ the ranks' parameters now differ"
                        ),
                        Font(f.px, bold=True),
                        t.ok if same else t.bad,
                        "params.agree",
                    )
                )
        if self.at_end():
            out += self.ending()
        return out

    def at_end(self) -> bool:
        """The last phase of the last step the run reported, once the run is over."""
        done = self.rec.complete_prefix()
        return self.rec.done and self.cursor.step + 1 >= done and PHASES[self.phase] == "step"

    def ending(self) -> list[_Entry]:
        t, f = self.t, self.small
        out: list[_Entry] = []
        st = self.step  # the status bar points here for why the average is not the full batch
        if st is not None and st.reference is not None and st.average_is_full_batch() is False:
            why = why_average_differs(self.rec, st)
            out.append(_Entry(f"✗ average ≠ full batch: {why}", f, t.text, "why"))
        errors = part(self.rec).reducer_errors
        if errors:
            first = errors[min(errors)]
            names = ", ".join(first.unused)
            out.append(
                _Entry(
                    f"step {first.step + 1} never started: DDP's reducer raised on "
                    f"{len(errors)} rank(s). Parameter indices in its text name {names}. It said:",
                    Font(f.px, bold=True),
                    t.bad,
                    "reducer.error",
                    float(first.step + 1),
                )
            )
            out.append(_Entry(excerpt(first.error), f, t.text, "reducer.text"))
        cost = cost_line(self.rec)
        if cost:
            ms = part(self.rec).cost_ms()
            out.append(_Entry(cost, f, t.text, "cost.with", ms[0] if ms else None))
        if count := count_line(self.rec):
            counts = part(self.rec).allreduce_counts() or {True: []}
            last = sum(counts[True][-1]) if counts[True] else None
            out.append(_Entry(count, f, t.text, "cost.allreduces", last))
        out += [
            _Entry(line, f, t.text, f"checkpoint.{i}")
            for i, line in enumerate(checkpoint_lines(self.rec))
        ]
        if launch := launch_line(self.rec):
            out.append(_Entry(launch, f, t.muted, "launch"))
        return out

    def paragraphs(self, top: float, entries: list[_Entry]) -> float:
        """The entries, wrapped; when the stage is too short for all of them, the last line
        that fits says so ("… more than the stage holds"), so nothing is cut off silently."""
        lines: list[tuple[str, _Entry, bool]] = []
        for e in entries:
            wrapped = wrap_lines(e.text, e.font, self.room, self.width)
            fits = lambda t, font=e.font: self.width(t, font) <= self.room  # noqa: E731
            parts = [part for w in wrapped for part in cut_to_fit(w, fits)]
            lines += [(part, e, i == 0) for i, part in enumerate(parts)]
        y, bottom = top, self.ctx.height
        for i, (text, e, first) in enumerate(lines):
            h = e.font.px * LINE
            last_fitting = i + 1 < len(lines) and y + h + lines[i + 1][1].font.px * LINE > bottom
            if y + h > bottom:
                break
            if last_fitting:
                fit = [c for c in CUT if self.width(c, self.small) <= self.room] or [CUT[-1]]
                self.text(self.pad, y, fit[0], self.small, self.t.muted, key="cut")
                return y + h
            key = e.key if first else ""
            self.text(self.pad, y, text, e.font, e.color, key=key, value=e.value if key else None)
            y += h
        return y


def excerpt(error: str) -> str:
    """The reducer's words that matter on a stage, word for word: its first two sentences and
    the one naming the parameters, with "…" where sentences are left out (``ddp-viz run``
    prints the whole text)."""
    sentences = [s.strip() for s in error.replace("\n", " ").split(". ") if s.strip()]
    keep = sentences[:2]
    named = [s for s in sentences[2:] if "did not receive grad" in s]
    if named:
        keep += ["…", named[0].split(" In addition")[0].strip()]
    text = ". ".join(keep).replace(". …. ", ". … ")
    return text if text.endswith((".", "…")) else text + "."


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """Every rank's BatchNorm buffers around each forward and how far apart they are;
    whether anything was averaged; the reducer's error, the cost of
    ``find_unused_parameters``, the checkpoint and the launch variables."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    return _Builder(record, cursor, progress, ctx).build()
