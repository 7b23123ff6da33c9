"""What every scene builder shares: line heights, easing, and placing measured text and shapes
on a :class:`StageFrame`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ddp_viz.model.frame import Align, Font, Rect, Shape, StageFrame, Text, wrap_lines
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import Cursor, RunRecord, StepRecord

LINE = 1.3  # line height in ems
LANE_LINE = 1.2  # rows inside a lane sit a little tighter; also the height of a text's box


def short_name(name: str) -> str:
    """``4.weight`` → ``4.w``, ``bias`` → ``b``: compact parameter names for a scene's labels."""
    head, _, tail = name.rpartition(".")
    short = {"weight": "w", "bias": "b"}.get(tail, tail)
    return f"{head}.{short}" if head else short


def ease(t: float) -> float:
    t = min(1.0, max(0.0, t))
    return t * t * (3 - 2 * t)


@dataclass
class Line:
    """A line of a title, caption or footer, with an optional right-aligned companion."""

    text: str
    font: Font
    color: str
    right: tuple[str, Font, str] | None = None
    keep: int = 0  # when space runs out, lines with the lowest ``keep`` go first
    # a second text right after this one, in its own colour (two checks on one line: each
    # check is one text in its own colour, never one text in the colour of either)
    then: tuple[str, str] | None = None

    @property
    def height(self) -> float:
        return self.font.px * LINE


class FrameBuilder:
    """Places texts (boxes exactly as wide as measured) and shapes on one frame."""

    def __init__(self, ctx: SceneContext) -> None:
        self.ctx = ctx
        self.t = ctx.theme
        self.frame = StageFrame(ctx.width, ctx.height, self.t.panel)
        self.base = max(ctx.base_px, ctx.min_px)
        self.pad = self.base * 0.6
        self.line = LANE_LINE  # height of a text's box, and of a row in a lane, in ems

    def width(self, text: str, font: Font) -> float:
        return self.ctx.measure(text, font)

    def text(
        self,
        x: float,
        y: float,
        text: str,
        font: Font,
        color: str,
        align: Align = Align.LEFT,
        key: str = "",
        value: float | None = None,
        alpha: int = 255,
        layer: int = 0,
    ) -> Text:
        """One line whose box is exactly its measured size; ``x`` is its left, centre or
        right edge by ``align``, ``y`` its top."""
        w = self.width(text, font)
        left = {Align.LEFT: x, Align.CENTER: x - w / 2, Align.RIGHT: x - w}[align]
        box = Rect(left, y, w, font.px * self.line)
        item = Text(box, text, font, color, align, key=key, value=value, alpha=alpha, layer=layer)
        self.frame.texts.append(item)
        return item

    def title(self, left: str, rights: Sequence[str], color: str) -> list[Line]:
        """The title line: ``left`` in large type and the first of ``rights`` that still fits
        beside it (none if none does); ``left`` shrinks rather than leave the stage."""
        big, small = Font(self.base * 1.2, bold=True), Font(self.base)
        room = self.ctx.width - 2 * self.pad
        right = next(
            (r for r in rights if self.width(left, big) + self.width(r, small) + self.base <= room),
            "",
        )
        if self.width(left, big) > room:
            # the type is drawn at whole pixels: a size rounded up went past the right edge
            # (13.7 px over at 489 px wide), so the size is the whole pixel that fits
            px = math.floor(big.px * room / self.width(left, big))
            while px > 1 and self.width(left, Font(px, bold=True)) > room:
                px -= 1
            if px < self.ctx.min_px:  # under the floor (a projector's 24 px): two lines
                big = Font(max(self.ctx.min_px, self.base), bold=True)
                lines = wrap_lines(left, big, room, self.width)
                return [Line(x, big, self.t.text) for x in lines]
            big = Font(px, bold=True)
        return [Line(left, big, self.t.text, (right, small, color) if right else None)]

    def caption(self, phase: str, waiting: bool, most: int) -> list[Line]:
        """The lesson's sentence for ``phase`` (or that the step has not arrived yet), wrapped
        to the stage's width, at most ``most`` lines."""
        text = "Waiting for the ranks to report this step…" if waiting else ""
        text = text or self.ctx.phase_text.get(phase, "")
        font = Font(self.base)
        lines = wrap_lines(text, font, self.ctx.width - 2 * self.pad, self.width)
        kept = [Line(line, font, self.t.muted) for line in lines[:most]]
        if 0 < most < len(lines):  # a sentence cut short says so (a GIF's subtitle read whole)
            kept[-1] = self.cut_short(kept[-1])
        return kept

    def cut_short(self, line: Line) -> Line:
        """The last line kept of a caption that lost its next ones, ending in "…" (it read as
        a whole sentence: "…; the same averaged gradients")."""
        words, room = line.text.split(), self.ctx.width - 2 * self.pad
        while len(words) > 1 and self.width(" ".join(words) + " …", line.font) > room:
            words.pop()
        return Line(" ".join(words) + " …", line.font, line.color)

    def shape(self, **kwargs: object) -> None:
        self.frame.shapes.append(Shape(**kwargs))  # type: ignore[arg-type]

    def emit(self, line: Line, y: float) -> None:
        first = self.text(self.pad, y, line.text, line.font, line.color)
        if line.then:
            then, color = line.then
            self.text(first.box.right + line.font.px * 1.5, y, then, line.font, color)
        if line.right:
            right, font, color = line.right
            self.text(
                self.ctx.width - self.pad,
                y + (line.font.px - font.px) * 0.5,
                right,
                font,
                color,
                Align.RIGHT,
            )


class StepFrameBuilder(FrameBuilder):
    """A scene that shows one recorded step: the record, the cursor, the step (None while it
    has not arrived) and the scene's small type."""

    def __init__(self, rec: RunRecord, cursor: Cursor, progress: float, ctx: SceneContext):
        super().__init__(ctx)
        self.rec, self.cursor, self.phase = rec, cursor, cursor.phase
        self.progress = min(1.0, max(0.0, progress))
        self.step: StepRecord | None = (
            rec.steps[cursor.step] if cursor.step < len(rec.steps) else None
        )
        self.small = Font(max(ctx.min_px, self.base * 0.9))


def empty_frame(ctx: SceneContext) -> StageFrame:
    """The stage before a run, whatever the scene: ``ctx.message``, centred."""
    frame = StageFrame(ctx.width, ctx.height, ctx.theme.panel)
    font = Font(max(ctx.min_px, ctx.theme.font_px * 1.3))
    lines = wrap_lines(ctx.message, font, ctx.width * 0.8, ctx.measure)
    y = (ctx.height - len(lines) * font.px * LINE) / 2
    for i, line in enumerate(lines):
        w = ctx.measure(line, font)
        box = Rect((ctx.width - w) / 2, y + i * font.px * LINE, w, font.px * LINE)
        frame.texts.append(Text(box, line, font, ctx.theme.muted, Align.CENTER))
    return frame
