"""The restart scene: one phase for each part of the lesson, every number from the run.

1. save: rank 0's checkpoint (its bytes and keys), each rank's wait at the barrier and the
   weights it loaded with ``map_location``, and whether every rank loaded rank 0's;
2. resume: the four ways of resuming, each rank's final weights against the run never
   stopped (= or ≠), and what the first resumed step did differently;
3. dies: torchrun's first attempt, a lane per rank from its first step to its last, the
   checkpoints saved on the way, and how each rank ended (killed, failed, stopped);
4. restart: the attempts after it (those whose rendezvous failed in a line each), the last
   attempt's lanes from the step it resumed from, the steps lost and the final weights.

When the stage is short (8 ranks on a projector) the lesson's caption gives way first, then
the lines below the lanes: a lane for every rank stays.
"""

from __future__ import annotations

from ddp_viz.kinds.resuming.record import (
    RestartRecord,
    loads_agree,
    part,
    reshard_equal,
    spec_of,
    zero_consolidated,
    zero_partition,
)
from ddp_viz.kinds.resuming.scene_lanes import draw_dies, draw_restart
from ddp_viz.kinds.resuming.scene_resume import draw_resume
from ddp_viz.model.frame import Font, Rect, StageFrame
from ddp_viz.model.scenes.base import LINE, FrameBuilder
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import PHASES, Cursor, RunRecord

PHASE_WORDS = ("save", "resume", "dies", "restart")
TITLES = (
    "save once, load everywhere",
    "resume with and without each piece",
    "a rank dies under torchrun",
    "torchrun restarts every rank",
)


class Builder(FrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, ctx: SceneContext) -> None:
        super().__init__(ctx)
        self.rec, self.phase = rec, cursor.phase
        self.part: RestartRecord = part(rec)
        self.spec = spec_of(rec)
        self.world = rec.world_size
        self.small = Font(max(ctx.min_px, self.base * 0.9))
        self.bold = Font(self.small.px, bold=True)
        self.lh = self.small.px * LINE
        self.text_h = self.small.px * self.line

    def lines_needed(self) -> float:
        """The lines the phase's body needs with a lane (or a row) for every rank."""
        if self.phase == 0:
            return self.world + 8
        if self.phase == 1:
            return 4 + 1 + 4
        if self.phase == 2:
            return self.world + 2
        return self.world + len(self.part.attempt_numbers()) + 3

    def build(self) -> StageFrame:
        right = f"{self.world} ranks · {self.spec.total_steps(self.world)} steps"
        lines = self.title(
            TITLES[self.phase].capitalize(), [right, f"{self.world} ranks"], self.t.muted
        )
        caption = self.caption(PHASES[self.phase], False, 2)
        room = self.ctx.height - self.pad * 1.5 - sum(x.height for x in lines)
        # a caption that does not fit whole gives way whole: half a sentence misleads
        if room - sum(x.height for x in caption) < self.lines_needed() * self.lh:
            caption = []
        y = self.pad * 0.6
        for line in [*lines, *caption]:
            self.emit(line, y)
            y += line.height
        top = y + self.pad * 0.4
        w, h = self.ctx.width - 2 * self.pad, self.ctx.height - top - self.pad * 0.5
        area = Rect(self.pad, top, w, h)
        if not self.ready():
            self.text(area.x, area.y, "Waiting for the ranks…", self.small, self.t.muted)
            return self.frame
        if self.phase == 0:
            self.save(area)
        else:
            (draw_resume, draw_dies, draw_restart)[self.phase - 1](self, area)
        return self.frame

    def ready(self) -> bool:
        p = self.part
        return p.resumed(self.world) if self.phase < 2 else p.outcome is not None

    def fit(self, texts: list[str], font: Font, width: float) -> str:
        """The first of ``texts`` that fits ``width``; else the last, cut with an ellipsis."""
        for text in texts:
            if self.width(text, font) <= width:
                return text
        text = texts[-1]
        while len(text) > 2 and self.width(text + "…", font) > width:
            text = text[:-1]
        return text + "…"

    def say(
        self,
        area: Rect,
        y: float,
        texts: list[str],
        color: str,
        key: str = "",
        value: float | None = None,
    ) -> float:
        """One line (the first of ``texts`` that fits) if it fits above the bottom; the
        ``y`` after it."""
        if y + self.text_h > area.bottom + 0.5:
            return y
        text = self.fit(texts, self.small, area.w)
        self.text(area.x, y, text, self.small, color, key=key, value=value)
        return y + self.lh

    # --- 1. save ------------------------------------------------------------------------------
    def save(self, area: Rect) -> None:
        p, f, t = self.part, self.small, self.t
        s = p.saved
        assert s is not None
        y = self.say(
            area,
            area.y,
            [
                'rank 0: torch.save → dist.barrier() → every rank: torch.load(map_location="cpu")',
                "rank 0 saves → barrier → every rank loads",
            ],
            t.text,
        )
        texts = [
            f"after step {s.step}: {s.bytes:,} bytes ({', '.join(s.keys)})",
            f"step {s.step}: {s.bytes:,} bytes",
        ]
        y = self.say(area, y, texts, t.text, key="saved.bytes", value=float(s.bytes))
        label_w = self.width(f"rank {self.world - 1}", f) + f.px * 0.6
        for rank in range(self.world):
            e = p.loaded.get(rank)
            self.text(area.x, y, f"rank {rank}", f, t.rank_color(rank))
            if e is not None:
                same = e.weights == s.weights
                texts = [
                    f"waited {e.waited:.3f} s · loaded CRC-32 {e.weights} "
                    f"{'= rank 0' if same else '≠ rank 0'}'s",
                    f"{e.waited:.3f} s · {e.weights} {'=' if same else '≠'}",
                ]
                text = self.fit(texts, f, area.w - label_w)
                ink = t.ok if same else t.bad
                self.text(area.x + label_w, y, text, f, ink, key=f"load.{rank}", value=e.waited)
            y += self.lh
        ok = loads_agree(p)
        texts = [
            f"{'✓' if ok else '✗'} every rank loaded the weights rank 0 saved (CRC-32 {s.weights})",
            f"{'✓' if ok else '✗'} every rank loaded rank 0's weights",
        ]
        y = self.say(area, y + self.pad * 0.2, texts, t.ok if ok else t.bad, key="loads")
        y = self.reshard_line(area, y)
        self.zero_line(area, y)

    def checked(
        self,
        area: Rect,
        y: float,
        ok: bool,
        key: str,
        said: list[str],
        sizes: list[str],
        value: float,
    ) -> float:
        """A check's line in its colour, then the bytes behind it in muted type (``key.bytes``,
        whose number is ``value``)."""
        y = self.say(area, y, said, self.t.ok if ok else self.t.bad, key=key)
        return self.say(area, y, sizes, self.t.muted, key=f"{key}.bytes", value=value)

    def reshard_line(self, area: Rect, y: float) -> float:
        """FSDP2's state saved at N ranks and loaded at M, when the stage has the room."""
        events = self.part.reshards
        if len(events) < self.world:
            return y
        n, m = events[0].saved_at, events[0].loaded_at
        ok = reshard_equal(self.part)
        mark, eq = marks(ok)
        said = [
            f"{mark} FSDP2 sharded over {n} ranks, saved with DCP, loaded over {m}: "
            f"parameters {eq} saved",
            f"{mark} DCP: parameters loaded at {m} ranks {eq} saved at {n}",
        ]
        files = ", ".join(f"{e.bytes:,}" for _, e in sorted(events.items()))
        sizes = [f"each rank's file of it, bytes: {files}", f"files: {files} B"]
        last = float(events[self.world - 1].bytes)
        return self.checked(area, y, ok, "reshard", said, sizes, last)

    def zero_line(self, area: Rect, y: float) -> float:
        """ZeRO's Adam state, a shard on each rank, gathered on rank 0 to be saved."""
        events = self.part.zeros
        if len(events) < self.world:
            return y
        first = events[0]
        ok = zero_partition(self.part) and zero_consolidated(self.part)
        mark, eq = marks(ok)
        said = [
            f"{mark} ZeRO: Adam's state split by parameter; consolidate_state_dict(to=0) "
            f"gathers all {first.full_params} on rank 0, {eq} plain Adam's",
            f"{mark} ZeRO: consolidated on rank 0 {eq} plain Adam's",
        ]
        held = ", ".join(f"{e.state_bytes:,}" for _, e in sorted(events.items()))
        sizes = [
            f"each rank's Adam state, bytes: {held}; gathered on rank 0: {first.full_bytes:,}",
            f"state: {held} B",
        ]
        return self.checked(area, y, ok, "zero", said, sizes, float(first.full_bytes))


def marks(ok: bool) -> tuple[str, str]:
    """A check's mark and its sign between the two things compared."""
    return ("✓", "=") if ok else ("✗", "≠")


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """The checkpoint rank 0 saved and every rank's load; four resumes against a run never
    stopped; torchrun's first attempt, a lane per rank, and the restart: the steps lost and
    the final weights."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    return Builder(record, cursor, ctx).build()
