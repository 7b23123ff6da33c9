"""The uneven-inputs scene: which rank trained which step, who ran out, who waits in what, and
how it ended, from what the ranks reported.

One lane per rank, one box per step: a step it trained (with its loss), a step it had no batch
for (under Join: the zeros it all-reduced; without: nothing), and the step where it got stuck.
While a rank is blocked its latest heartbeat says for how long (the recorded wait, not a clock
of the window's); when the timeout ends the wait, gloo's error is shown word for word.
"""

from __future__ import annotations

import re

from ddp_viz.kinds.uneven.record import (
    KIND,
    ONE_PROCESS_TOL,
    UnevenRecord,
    ended_by,
    found,
    missing_text,
)
from ddp_viz.model.cursor import shown
from ddp_viz.model.frame import Align, Font, Rect, StageFrame, cut_to_fit, fmt, wrap_lines
from ddp_viz.model.scenes.base import LINE, StepFrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import (
    AGREE_TOL,
    PHASES,
    Cursor,
    RunRecord,
    RunStatus,
    display_value,
    grads_close,
    max_abs_diff,
)


class _Builder(StepFrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(rec, cursor, progress, ctx)
        spec = rec.scenario.get(KIND, {})
        # another kind's recording shown on this lesson: nothing of uneven inputs to draw
        self.un = rec.parts.get(KIND) or UnevenRecord()
        self.join = bool(spec.get("join", False))
        self.timeout = float(spec.get("timeout_s", 0.0))
        self.debug = str(spec.get("debug", "none"))
        self.total = rec.steps_total()
        self.names = [p.name for p in rec.params]
        # What lies past the steps every rank finished (who ran out, who got stuck, gloo's
        # error, the final parameters) shows once the stage has shown those steps: never
        # during an earlier step, also while the run is live (a live stall is reached in
        # milliseconds, while the stage still plays step 1). Only a live heartbeat, what the
        # ranks do now, shows at every step.
        n = rec.complete_prefix()
        self.past_end = n == 0 or shown(cursor, self.progress, n - 1, "step")

    def reached(self, s: int, phase: str) -> bool:
        """A step's box shows what its phase produced once the stage has shown that phase;
        a step no rank finished, once the stage is past the end."""
        if s >= self.rec.complete_prefix():
            return self.past_end
        return shown(self.cursor, self.progress, s, phase)

    def build(self) -> StageFrame:
        n = self.cursor.step + 1
        tool = {"detail": " · DETAIL", "monitored_barrier": " · monitored_barrier"}
        how = ("Join on" if self.join else "no Join") + tool.get(self.debug, "")
        right = (f"{how} · timeout {self.timeout:g} s", how)
        lines = self.title(f"Step {n} of {self.total}", list(right), self.t.muted)
        lines += self.caption(PHASES[self.phase], False, 2)
        y = self.pad * 0.6
        for line in lines:
            self.emit(line, y)
            y += line.height
        y = self.lanes(y + self.pad * 0.5)
        self.outcome(y + self.pad * 0.5)
        return self.frame

    # --- one lane per rank ---------------------------------------------------------------------
    def lanes(self, top: float) -> float:
        t, f = self.t, self.small
        lh = f.px * LINE
        label_w = self.width(f"rank {self.rec.world_size - 1}", f) + f.px
        room = self.ctx.width - 2 * self.pad - label_w
        box_w = min(room / max(1, self.total), self.width("loss 00.00", f) * 1.6)
        x0 = self.pad + label_w
        for s in range(self.total):
            self.text(x0 + (s + 0.5) * box_w, top, f"step {s + 1}", f, t.muted, Align.CENTER)
        y = top + lh
        box_h = lh * 2.2
        for r in range(self.rec.world_size):
            self.text(self.pad, y + (box_h - lh) / 2, f"rank {r}", f, t.rank_color(r))
            for s in range(self.total):
                self.box(r, s, Rect(x0 + s * box_w + 2, y, box_w - 4, box_h))
            y += box_h + lh * 0.3
        return y

    def box(self, r: int, s: int, box: Rect) -> None:
        t, f = self.t, self.small
        lh = f.px * LINE
        st = self.rec.steps[s] if s < len(self.rec.steps) else None
        rs = st.ranks.get(r) if st else None
        shadow = self.un.shadows.get((s, r))
        ran_out = self.un.out_of_data.get(r)
        key = f"rank{r}.step{s}"
        if rs is not None and rs.complete and self.reached(s, "local"):  # its loss
            self.shape(
                kind="rrect", box=box, fill=t.rank_color(r), fill_alpha=60, radius=4, key=key
            )
            self.text(
                box.cx,
                box.y + 2,
                f"loss {fmt(rs.loss)}",
                f,
                t.text,
                Align.CENTER,
                key=f"{key}.loss",
                value=rs.loss,
            )
            self.text(box.cx, box.y + 2 + lh, "trained", f, t.muted, Align.CENTER)
        elif shadow is not None and self.reached(s, "allreduce"):
            self.shape(kind="rrect", box=box, stroke=t.accent, width=2, radius=4, key=key)
            zeros = " ".join(fmt(display_value(shadow.grads.get(n))) for n in self.names)
            self.text(box.cx, box.y + 2, "Join: sent", f, t.accent, Align.CENTER)
            self.text(
                box.cx,
                box.y + 2 + lh,
                zeros,
                f,
                t.text,
                Align.CENTER,
                key=f"{key}.zeros",
                value=0.0,
            )
        elif ran_out is not None and s >= ran_out and self.reached(s, "shards"):
            self.shape(kind="rrect", box=box, stroke=t.muted, width=1, radius=4, key=key)
            self.text(box.cx, box.y + 2, "no batch", f, t.muted, Align.CENTER)
        elif s == self.stuck_step(r) and self.past_end:
            self.shape(kind="rrect", box=box, stroke=t.bad, width=2, radius=4, key=key)
            self.text(box.cx, box.y + 2, "stuck", f, t.bad, Align.CENTER)

    def stuck_step(self, r: int) -> int | None:
        """The step a rank was blocked in (its first unreported one), if it is blocked."""
        if r not in self.un.waiting and r not in self.un.stalled:
            return None
        done = [s for s, st in enumerate(self.rec.steps) if r in st.ranks and st.ranks[r].complete]
        return (max(done) + 1) if done else 0

    def found_lines(self) -> list[tuple[str, Font, str, str, float | None]]:
        """The tool that found the hang, how fast, against the timeout; and what each rank's
        group was (DETAIL's wrapper), as the ranks reported."""
        t, f = self.t, self.small
        out: list[tuple[str, Font, str, str, float | None]] = []
        checks = self.un.hang_checks
        if self.debug == "detail" and checks:
            backends = sorted({c.backend for c in checks.values()})
            levels = "/".join(sorted({c.level for c in checks.values()}))
            out.append(
                (
                    f"TORCH_DISTRIBUTED_DEBUG={levels}: the hook's all-reduces and the barrier "
                    f"ran on a {', '.join(backends)} "
                    f"on {len(checks)} of {self.rec.world_size} ranks, each collective checked "
                    "against the other ranks' first",
                    f,
                    t.muted,
                    "hang_check",
                    None,
                )
            )
        stall = found(self.un)
        if stall is not None and self.past_end:  # how it ended, once the stage got there
            if ended_by(stall) == "mismatch":
                tool = "DETAIL reported the mismatch"
            else:
                tool = f"monitored_barrier named {missing_text(stall)}"
            out.append(
                (
                    f"Found: {tool} after {fmt(stall.waited_s, 3)} s, where the timeout would "
                    f"have waited {self.timeout:g} s",
                    Font(f.px, bold=True),
                    t.accent,
                    "found",
                    stall.waited_s,
                )
            )
        return out

    def wrap(self, text: str, font: Font, room: float) -> list[str]:
        lines = wrap_lines(text, font, room, self.width)
        return [
            part
            for line in lines
            for part in cut_to_fit(line, lambda t: self.width(t, font) <= room)
        ]

    # --- how it ended --------------------------------------------------------------------------
    def outcome(self, top: float) -> None:
        # a wait and how it ended show while it happens, or once the stage has shown the
        # steps before it; Join's zeros once their all-reduce has been shown
        t, f = self.t, self.small
        # what found the hang first: the ranks' errors after it can be long
        lines: list[tuple[str, Font, str, str, float | None]] = self.found_lines()
        for r in range(self.rec.world_size):
            stall = self.un.stalled.get(r)
            beat = self.un.waiting.get(r)
            if stall is not None and self.past_end:
                how = {
                    "peer": "its peer's timeout closed the connection"
                    if found(self.un) is None
                    else "its peer closed the connection after its own error",
                    "timeout": "the timeout ended it",
                    "mismatch": "DETAIL's check ended it",
                    "monitored_barrier": "monitored_barrier ended it, naming "
                    + missing_text(stall),
                }[ended_by(stall)]
                # a tool's answer comes in hundredths of a second: show them
                waited = f"{stall.waited_s:.1f}" if stall.waited_s >= 1 else f"{stall.waited_s:.3f}"
                who = "the check" if ended_by(stall) == "mismatch" else "gloo"
                lines.append(
                    (
                        f"rank {r} waited {waited} s in {stall.what}; {how}, and "
                        f"{who} said: {stall.error}",
                        f,
                        t.bad,
                        f"stalled.{r}",
                        stall.waited_s,
                    )
                )
            elif stall is None and beat is not None and self.rec.status is RunStatus.RUNNING:
                waited = beat.now - beat.since
                lines.append(
                    (
                        f"rank {r} waiting in {beat.what} for {waited:.1f} s",
                        Font(f.px, bold=True),
                        t.bad,
                        f"waiting.{r}",
                        waited,
                    )
                )
        for (s, r), shadow in sorted(self.un.shadows.items()):
            if self.reached(s, "allreduce"):
                avg = "  ".join(
                    f"{n} {fmt(display_value(shadow.averaged.get(n)))}" for n in self.names
                )
                lines.append(
                    (
                        f"step {s + 1}: rank {r} had no batch left; under Join its hook "
                        "all-reduced "
                        f"zeros, and the average came back {avg}: the other ranks' gradients "
                        f"divided by all {self.rec.world_size} ranks",
                        f,
                        t.text,
                        f"shadow.{s}.{r}",
                        None,
                    )
                )
        final = self.un.final_params
        if self.past_end and len(final) == self.rec.world_size:
            first = final[min(final)]
            same = all(grads_close(first, p, AGREE_TOL) for p in final.values())
            values = "  ".join(f"{n} {fmt(display_value(first.get(n)))}" for n in self.names)
            who = max(self.un.out_of_data, key=lambda r: (self.un.out_of_data[r], r))
            how = f"Join copied rank {who}'s, the last to finish" if self.join else "the last step"
            verdict = "✓ the same on every rank" if same else "✗ the ranks differ"
            lines.append(
                (
                    f"after the loop and the barrier: {values} · {verdict} ({how})",
                    Font(f.px, bold=True),
                    t.ok if same else t.bad,
                    "final",
                    None,
                )
            )
            solo = self.un.one_process
            if solo is not None:
                diff = max_abs_diff(first, solo)
                values = "  ".join(f"{n} {fmt(display_value(solo.get(n)))}" for n in self.names)
                close = diff <= ONE_PROCESS_TOL
                lines.append(
                    (
                        f"one process, float64, the same rows, each step ÷ "
                        f"{self.rec.world_size} (Join's default): {values} · "
                        + (
                            f"✓ equal (largest difference {fmt(diff, 2)})"
                            if close
                            else f"✗ differs by {fmt(diff, 2)}"
                        ),
                        f,
                        t.ok if close else t.bad,
                        "one_process",
                        diff,
                    )
                )
        room = self.ctx.width - 2 * self.pad
        wrapped = [self.wrap(short_sources(text), font, room) for text, font, *_ in lines]
        heights = [line[1].px * LINE for line in lines]
        fit_lines(wrapped, heights, self.ctx.height - top)
        y = top
        for (_, font, color, key, value), parts in zip(lines, wrapped, strict=True):
            for i, line in enumerate(parts):
                k = key if i == 0 else ""
                self.text(self.pad, y, line, font, color, key=k, value=value if k else None)
                y += font.px * LINE


SOURCE = re.compile(r"\[(/[^\]\s]*/)([^/\]\s]+)\]")


def short_sources(text: str) -> str:
    """gloo's source paths without their build folders: ``[…/unbound_buffer.cc:78]`` (the
    whole path is one word too long for a line, and says nothing to a learner)."""
    return SOURCE.sub(r"[…/\2]", text)


def fit_lines(wrapped: list[list[str]], heights: list[float], room: float) -> None:
    """Shorten the longest entries (in place) until they fit ``room``: each keeps its first
    line, a shortened one ends in "…"; entries that still do not fit are left out."""

    def used() -> float:
        return sum(len(parts) * h for parts, h in zip(wrapped, heights, strict=True))

    while used() > room:
        longest = max(range(len(wrapped)), key=lambda i: len(wrapped[i]))
        if len(wrapped[longest]) <= 1:
            break
        kept = wrapped[longest][:-1]
        head, _, _ = kept[-1].rpartition(" ")  # a word gives way to the "…"
        wrapped[longest] = [*kept[:-1], (head or kept[-1]) + " …"]
    for i in range(len(wrapped) - 1, -1, -1):  # still too long: the last entries go
        if used() <= room:
            break
        wrapped[i] = []


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """A lane per rank (trained, no batch, stuck, Join's zeros), the heartbeats and how the
    run ended."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    return _Builder(record, cursor, progress, ctx).build()
