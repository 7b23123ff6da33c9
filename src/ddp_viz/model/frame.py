"""What the stage shows, as data: texts and shapes in pixels, decided before anything paints.

A scene (see :mod:`ddp_viz.model.scenes`) turns a recorded run and a position into a
:class:`StageFrame`; the Qt stage only draws it. Tests read frames directly: which numbers are
on screen, at which pixel size, in which box, and whether any two boxes overlap.

Text widths depend on the fonts of the machine, so a scene measures through a
:class:`Measure` it is given: the window passes Qt's font metrics, pure tests a fixed-width
estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum


class Align(Enum):
    LEFT = "left"
    CENTER = "center"
    RIGHT = "right"


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    def overlaps(self, other: Rect, slack: float = 0.5) -> bool:
        """True when the two boxes share more than ``slack`` pixels in both directions."""
        return (
            min(self.right, other.right) - max(self.x, other.x) > slack
            and min(self.bottom, other.bottom) - max(self.y, other.y) > slack
        )

    def contains(self, other: Rect, slack: float = 0.5) -> bool:
        return (
            other.x >= self.x - slack
            and other.y >= self.y - slack
            and other.right <= self.right + slack
            and other.bottom <= self.bottom + slack
        )

    def inset(self, dx: float, dy: float | None = None) -> Rect:
        dy = dx if dy is None else dy
        return Rect(self.x + dx, self.y + dy, max(0.0, self.w - 2 * dx), max(0.0, self.h - 2 * dy))


@dataclass(frozen=True)
class Font:
    px: float
    bold: bool = False
    mono: bool = False


# (text, font) -> width in pixels of one line of that text
Measure = Callable[[str, Font], float]


def estimate_width(text: str, font: Font) -> float:
    """A font-free stand-in for pure tests: 0.62 em per character (0.6 mono, +5% bold)."""
    per = 0.6 if font.mono else 0.62
    return len(text) * font.px * per * (1.05 if font.bold else 1.0)


@dataclass(frozen=True)
class Text:
    """One line of text in ``box`` (exactly as wide as the text measures).

    ``key`` names what a number is (``"rank1.local.weight"``) and ``value`` is the recorded
    value it shows, so tests can compare the screen with the events.
    """

    box: Rect
    text: str
    font: Font
    color: str
    align: Align = Align.LEFT
    key: str = ""
    value: float | None = None
    alpha: int = 255
    layer: int = 0  # drawn above everything of lower layers (a chip in flight covers the table)


@dataclass(frozen=True)
class Shape:
    """A filled or stroked primitive.

    ``kind``: ``rect``, ``rrect`` (rounded), ``ellipse`` (``box`` bounds it), ``line`` (from
    ``points[0]`` to ``points[1]``), ``marker`` (a rank's marker shape, named by ``key``).
    """

    kind: str
    box: Rect = Rect(0, 0, 0, 0)
    points: tuple[tuple[float, float], ...] = ()
    stroke: str = ""
    stroke_alpha: int = 255
    width: float = 1.0
    fill: str = ""
    fill_alpha: int = 255
    radius: float = 0.0
    key: str = ""
    layer: int = 0


@dataclass(frozen=True)
class Link:
    """A part of the stage that does something when clicked (or focused with Tab and
    activated with Enter): ``key`` names it to the page's kind (a watched run's diagnosis
    goes to its step and stack); ``lesson``, when set, is a course lesson it opens; ``label``
    says what it does (its tooltip, and what a screen reader reads)."""

    box: Rect
    key: str
    label: str
    lesson: str = ""


@dataclass
class StageFrame:
    width: float
    height: float
    background: str
    shapes: list[Shape] = field(default_factory=list)
    texts: list[Text] = field(default_factory=list)
    # the part of the lesson's listing this frame shows running (a key of its
    # ``[code] sections``: the ring's reduce-scatter or all-gather loop); "" for all of it
    section: str = ""
    links: list[Link] = field(default_factory=list)  # in the order Tab visits them

    # --- reading a frame (tests, exports) -----------------------------------------------------
    def numbers(self) -> dict[str, float]:
        """Every number on screen that stands for a recorded value, by key."""
        return {t.key: t.value for t in self.texts if t.key and t.value is not None}

    def text_with_key(self, key: str) -> Text | None:
        return next((t for t in self.texts if t.key == key), None)

    def link_at(self, x: float, y: float) -> Link | None:
        return next((k for k in self.links if k.box.contains(Rect(x, y, 0, 0), 0.0)), None)

    def all_text(self) -> str:
        return "\n".join(t.text for t in self.texts)

    def smallest_px(self) -> float:
        return min((t.font.px for t in self.texts if t.text), default=float("inf"))

    def overlapping_texts(self) -> Iterator[tuple[Text, Text]]:
        """Pairs of texts on one layer whose boxes overlap. A text on a higher layer is drawn
        over the lower ones on a ground of its own (a shard chip in flight over the data table),
        so it hides them rather than clashing with them."""
        shown = [t for t in self.texts if t.text and t.box.w > 0 and t.box.h > 0]
        for i, a in enumerate(shown):
            for b in shown[i + 1 :]:
                if a.layer == b.layer and a.box.overlaps(b.box):
                    yield a, b


def wrap_lines(text: str, font: Font, width: float, measure: Measure) -> list[str]:
    """Greedy word wrap into lines no wider than ``width`` (a long word gets a line of its own)."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        trial = f"{current} {word}" if current else word
        if current and measure(trial, font) > width:
            lines.append(current)
            current = word
        else:
            current = trial
    if current:
        lines.append(current)
    return lines


def fmt(v: float | None, digits: int = 4) -> str:
    """A recorded number for the stage: 4 significant digits and a real minus sign."""
    if v is None or v != v:
        return "—"
    return f"{v:.{digits}g}".replace("-", "−")


def cut_to_fit(line: str, fits: Callable[[str], bool]) -> list[str]:
    """A line with a word too long for the stage (a file path in an error), cut where it
    must be: as many characters as fit, then the rest."""
    out = []
    while line and not fits(line):
        n = len(line) - 1
        while n > 1 and not fits(line[:n]):
            n -= 1
        out.append(line[:n])
        line = line[n:]
    return [*out, line] if line else out
