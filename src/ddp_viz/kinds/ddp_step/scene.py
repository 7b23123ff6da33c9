"""The DDP step scene: shards, local gradients, the all-reduce, the identical optimizer step.

One lane per rank. Columns: who (rank, pid) · shard (rows, loss) · local gradient per
parameter · the all-reduce hub · averaged gradient per parameter · parameters after the step.
Every digit is a recorded value (a tensor of more than one value shows its L2 norm, labelled
‖·‖); ``progress`` moves chips, bars, dots and fades, never digits. Nothing appears before its
phase: local values from phase 2, averaged values and the full-batch check from the second half
of phase 3, parameters from phase 4, "all ranks equal" when phase 4 has finished.
"""

from __future__ import annotations

from ddp_viz.kinds.ddp_step.scene_lanes import grad_label
from ddp_viz.kinds.ddp_step.scene_table_hub import TableAndHub
from ddp_viz.model.frame import Font, StageFrame, fmt, wrap_lines
from ddp_viz.model.protocol import Grads
from ddp_viz.model.reference import reference_policy, values_policy
from ddp_viz.model.scenes.base import Line
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.sharing import unequal_shards_note
from ddp_viz.model.timeline import (
    PHASE_TITLES,
    PHASES,
    Cursor,
    RunRecord,
    RunStatus,
    StepRecord,
    display_value,
)

TIGHT_LINE = 1.1  # lane rows when space is short (a projector at 8 ranks)


# the tensors take turns for want of width when a row each leaves the lanes' words under
# this share of the floor: 23 px beside 24 is no reason to hide the bias behind a key
TURNS_UNDER = 0.9


class _Builder(TableAndHub):
    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(ctx)
        self.rec, self.cursor = rec, cursor
        self.progress = min(1.0, max(0.0, progress))
        self.phase = cursor.phase
        self.step: StepRecord | None = (
            rec.steps[cursor.step] if cursor.step < len(rec.steps) else None
        )
        self.start_sizes = (self.base, self.line, self.lane_pad)

    # --- the whole frame -------------------------------------------------------------------
    def build(self) -> StageFrame:
        # the lanes' type is sized for the tightest of the step's phases, so it does not change
        # as the checks and captions come and go (the lanes are placed in this phase's room)
        now = self.phase, self.progress
        self.paging = self.step is not None and self.must_take_turns()
        if self.step is not None and not self.paging and self.under_floor():
            self.paging = self.one_a_page = True  # for want of width: one tensor a turn
        rooms = [self.plan(phase, 1.0)[2] for phase in (1, 2, 3)] if self.step else []
        upper, footer, room = self.plan(*now)
        y = self.pad * 0.6
        turns_y = None
        for line in upper:
            if line.text:
                self.emit(line, y)
            else:  # the tensors' turns: said once the lanes know how many they hold
                turns_y = y
            y += line.height
        bottom = self.ctx.height - self.pad * 0.6 - sum(line.height for line in footer)
        fy = bottom
        for line in footer:
            self.emit(line, fy)
            fy += line.height
        lay = self.layout(y + self.pad * 0.5, bottom - self.pad * 0.5, min([room, *rooms]))
        if turns_y is not None and lay.turns:
            self.say_turns(lay.turns, turns_y)
        self.data_table(lay)
        for r in range(self.rec.world_size):
            self.lane(lay, r)
        if self.step is not None:
            self.hub(lay)
        return self.frame

    def say_turns(self, words: tuple[str, ...], y: float) -> None:
        """The longest words for the tensors' turns that fit across; the shortest, shrunk, when
        none does (a stage too narrow for projector type anyway)."""
        font, room = Font(self.ctx.min_px), self.ctx.width - 2 * self.pad
        text = next((w for w in words if self.width(w, font) <= room), words[-1])
        if self.width(text, font) > room:
            font = Font(font.px * room / self.width(text, font) * 0.98)
        self.text(self.pad, y, text, font, self.t.muted, key="turns")

    def plan(self, phase: int, progress: float) -> tuple[list[Line], list[Line], float]:
        """(title and caption, footer, the lanes' height) at ``phase``: the lanes' numbers come
        first. When they do not fit at the smallest allowed type: drop the caption, then the
        checks' details (the reason last), shrink the headings, tighten the lanes' rows.
        Leaves the type and row sizes it settled on."""
        self.phase, self.progress = phase, progress
        self.base, self.line, self.lane_pad = self.start_sizes
        title = self.plan_title()
        if self.paging:  # a line for which tensors this page shows (its words come later)
            title = [*title, Line("", Font(self.ctx.min_px), self.t.muted)]
        caption = self.plan_caption()
        head, detail = self.plan_footer()
        while self.used(title, caption, head, detail) + self.lanes_need() > self.ctx.height:
            if caption:
                caption = caption[:-1]
            elif any(line.keep < 2 for line in detail):
                lowest = min(line.keep for line in detail)
                drop = max(i for i, line in enumerate(detail) if line.keep == lowest)
                detail = detail[:drop] + detail[drop + 1 :]
            elif self.base > self.ctx.min_px:
                self.base = self.ctx.min_px
                title, (head, detail) = self.plan_title(), self.plan_footer()
                detail, caption = [line for line in detail if line.keep >= 2], []
            elif self.line > TIGHT_LINE:
                self.line, self.lane_pad = TIGHT_LINE, 0.15
            elif detail:
                detail = detail[:-1]
            else:
                break
        if caption and len(caption) < len(self.plan_caption()):  # a sentence cut short says so
            caption = [*caption[:-1], self.cut_short(caption[-1])]
        upper, footer = title + caption, head + detail
        room = self.ctx.height - self.used(upper, footer)
        return upper, footer, room

    def used(self, *groups: list[Line]) -> float:
        return sum(line.height for g in groups for line in g) + self.pad * 2.2

    def must_take_turns(self) -> bool:
        """Whether the tensors take turns: a row for each does not fit at the smallest type
        with everything else given way (the footer of the step's last phase, its largest)."""
        if len(self.rec.params) < 2:
            return False
        self.paging = False
        upper, footer, _ = self.plan(3, 1.0)
        return self.used(upper, footer) + self.lanes_need() > self.ctx.height + 0.5

    def under_floor(self) -> bool:
        """Whether a row for each tensor leaves the lanes' words under the theme's floor for
        want of width (2 ranks on a projector at 1280×800: 10–18 px labels beside 24 px
        everywhere else); then the tensors take turns, as for want of height."""
        if len(self.rec.params) < 2:
            return False
        rooms = [self.plan(phase, 1.0)[2] for phase in (1, 2, 3)]
        upper, footer, room = self.plan(3, 1.0)
        top = self.pad * 0.6 + sum(line.height for line in upper) + self.pad * 0.5
        bottom = self.ctx.height - self.pad * 1.1 - sum(line.height for line in footer)
        lay = self.layout(top, bottom, min([room, *rooms]))
        return min(lay.f, lay.num) < self.ctx.min_px * TURNS_UNDER

    def lanes_need(self) -> float:
        """Height of the lanes at the smallest allowed type, every parameter with a row (one
        row when the tensors take turns)."""
        n, f = max(1, self.rec.world_size), self.ctx.min_px
        rows = 1 if self.paging else max(2, len(self.rec.params))
        return n * f * (rows * self.line + self.lane_pad) * 1.01 + (n - 1) * self.lane_gap

    def plan_title(self) -> list[Line]:
        t, rec = self.t, self.rec
        total = rec.steps_total()  # a cancelled run: the steps it made
        left = f"Step {self.cursor.step + 1} of {total}  ·  {PHASE_TITLES[PHASES[self.phase]]}"
        status = {
            RunStatus.RUNNING: "live run",
            RunStatus.FINISHED: "recorded run" if rec.replayed else "run finished",
            RunStatus.FAILED: "run failed",
            RunStatus.CANCELLED: "run cancelled",
        }.get(rec.status, "")
        color = t.bad if rec.status in (RunStatus.FAILED, RunStatus.CANCELLED) else t.muted
        # the phase title matters more than the rank count, which goes first
        return self.title(left, [f"{status} · {rec.world_size} rank(s), gloo", status], color)

    def plan_caption(self) -> list[Line]:
        return self.caption(PHASES[self.phase], self.step is None, 3)

    # --- footer: the checks ------------------------------------------------------------------
    def plan_footer(self) -> tuple[list[Line], list[Line]]:
        """(headlines, details): the checks once they are earned, or why the run ended."""
        t, rec, st = self.t, self.rec, self.step
        font = Font(self.base, bold=True)
        body = Font(max(self.ctx.min_px, self.base * 0.9))
        room = self.ctx.width - 2 * self.pad
        head: list[Line] = []
        detail: list[Line] = []
        # the run's end at its last step; the steps before it keep the checks they earned
        # (a GIF of a cancelled run said "cancelled" on every frame, with no check anywhere)
        last = self.cursor.step >= rec.complete_prefix() - 1
        if rec.status in (RunStatus.FAILED, RunStatus.CANCELLED) and (last or st is None):
            what = "■ run cancelled" if rec.status is RunStatus.CANCELLED else "✗ run failed"
            head.append(Line(f"{what} after {rec.complete_prefix()} complete step(s)", font, t.bad))
            if rec.status is RunStatus.FAILED and rec.reason:
                detail = [
                    Line(w, body, t.bad) for w in wrap_lines(rec.reason, body, room, self.width)
                ]
            return head, detail
        if st is None:
            return head, detail
        if not st.has_values:  # a long run's later step: loss and timings only
            head.append(Line("○ gradients and parameters not recorded at this step", font, t.muted))
            detail = [
                Line(w, body, t.muted, keep=2)
                for w in wrap_lines(values_policy(), body, room, self.width)
            ]
            return head, detail
        equal = self.phase == 3 and self.progress >= 1.0
        agree = st.ranks_agree() if equal else None
        mark = "○" if agree is None else ("✓" if agree else "✗")
        eq_color = t.muted if agree is None else (t.ok if agree else t.bad)
        eq_text = f"{mark} all ranks equal" if agree is not False else "✗ ranks differ"
        check = self.average_check(st)
        if check is None:
            if st.reference is None and self.averaged_shown():  # a long run's later step
                detail += [
                    Line(w, body, t.muted, keep=2)
                    for w in wrap_lines(reference_policy(), body, room, self.width)
                ]
            return [Line(eq_text, font, eq_color)], detail
        same, paragraphs = check
        verdict = "✓ average = full batch" if same else "✗ average ≠ full batch"
        v_color = t.ok if same else t.bad
        if self.width(f"{eq_text}{verdict}", font) + font.px * 1.5 <= room:  # each its colour
            head.append(Line(eq_text, font, eq_color, then=(verdict, v_color)))
        else:
            head += [Line(eq_text, font, eq_color), Line(verdict, font, v_color)]
        for para, keep in paragraphs:
            lines = wrap_lines(para, body, room, self.width)
            detail += [Line(w, body, t.text, keep=keep) for w in lines]
        return head, detail

    def average_check(self, st: StepRecord) -> tuple[bool, list[tuple[str, int]]] | None:
        """(DDP's average equals the full batch?, explanation) once the averages are shown;
        each paragraph comes with how much it matters when space is short."""
        if st.reference is None or not self.averaged_shown():
            return None
        same = bool(st.average_is_full_batch())
        ref = st.reference
        params = self.rec.params
        avg = st.averaged() or {}

        def listing(grads: Grads) -> str:
            return ", ".join(
                f"{grad_label(p)} {fmt(display_value(grads.get(p.name)))}" for p in params
            )

        if same:
            return True, [
                (f"full-batch reference (one process, float64): {listing(ref.full_batch_grads)}", 0)
            ]
        return False, [
            (
                f"DDP's average: {listing(avg)} = the shard average by hand: "
                f"{listing(ref.manual_average)}",
                1,
            ),
            (f"full batch over all rows (reference): {listing(ref.full_batch_grads)}", 0),
            ("why: " + unequal_shards_note(ref.shard_sizes), 2),
        ]


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """The shards, each rank's local gradients, the all-reduce and the step."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    return _Builder(record, cursor, progress, ctx).build()
