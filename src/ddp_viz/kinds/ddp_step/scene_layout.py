"""Where the DDP step scene's lanes go and how large their type is.

The numbers (each rank's gradient before and after the all-reduce, the new parameters) are
what the lesson is about, so they get the room: they grow up to :data:`NUM_GROW` times the
stage's type where the stage allows, and shrink last. Two arrangements are tried and the one
with the larger numbers wins: six columns (who · shard · local · hub · averaged · after), or a
lane with a header row (rank, pid, rows, loss) over four columns, which a narrow, tall stage
(a laptop's window) fits at a much larger size. Column widths come from the widest number of
the whole run (``RunRecord.value_chars``), so the type stays the same from step to step.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddp_viz.kinds.ddp_step.scene_labels import grad_label, param_label
from ddp_viz.model.frame import Font, Rect, fmt
from ddp_viz.model.modelspec import ParamInfo
from ddp_viz.model.report import shard_label
from ddp_viz.model.scenes.base import LINE, FrameBuilder
from ddp_viz.model.timeline import Cursor, RunRecord, StepRecord

NUM_GROW = 1.6  # the numbers reach this many times the stage's type when there is room
LABEL_FLOOR = 7.0  # labels never shrink below this (the numbers' floor is the theme's)
LABEL_SHARE = 0.62  # labels shrink to this share of the numbers before the numbers shrink
LABEL_KEEP = 16.0  # ...but not under the theme's floor (a projector's: this) while they do
ARROW_EMS = 1.6  # room for the arrow from a parameter's old value to its new one
SHARES = ((2, 0.3), (3, 0.1), (4, 0.3), (5, 0.1), (1, 0.2))  # of the spare width, by column


@dataclass
class _Layout:
    f: float  # the labels' type size
    rows: int  # text rows per lane (the header row included)
    shown: list[ParamInfo]  # parameters with a row of their own
    hidden: int  # parameters summarised as "+k more"
    data: Rect  # the data table (w = 0: folded away)
    lanes: list[Rect]
    cols: list[float]  # x of the 6 column starts, plus the right edge
    strip: bool = False  # the table runs across the top (narrow stages) instead of down the left
    num: float = 0.0  # the gradients' and new parameters' type; rows are this tall
    header: bool = False  # rank, pid, rows and loss on a row of their own (columns 0, 1 empty)
    # when the tensors take turns: which ones this page shows and the key, longest words first
    turns: tuple[str, ...] = ()

    @property
    def one_row(self) -> bool:
        """A lane of one row: rank and rows only (pid and loss give way; the plots have the
        loss per rank)."""
        return self.rows == 1

    @property
    def row(self) -> float:
        return max(self.f, self.num)

    @property
    def pad(self) -> float:
        """Room between a number and its column's (or the lane's) right edge."""
        return number_pad(self.row)


def number_pad(num: float) -> float:
    return max(4.0, num * 0.3)


@dataclass
class _Fit:
    f: float
    num: float
    data_w: float
    x0: float
    avail: float
    widths: list[float]

    @property
    def fits(self) -> bool:
        return sum(self.widths) <= self.avail + 0.5


class LanesLayout(FrameBuilder):
    """Lays the lanes out; the scene sets ``rec``, ``cursor``, ``progress``, ``phase`` and
    ``step`` first."""

    rec: RunRecord
    cursor: Cursor
    progress: float
    phase: int
    step: StepRecord | None

    lane_pad: float = 0.5  # ems of space around a lane's rows (0.15 when space is short)
    # the tensors take turns (a page of them at a time, the T key turns it) when a row for
    # each does not fit at the smallest allowed type: 8 ranks × 4 tensors on a projector
    # showed ~12 px labels and "+3 more" rather than the projector's 24 px
    paging: bool = False
    one_a_page: bool = False  # turns for want of width (the rows' count is not the limit)

    @property
    def lane_gap(self) -> float:
        return max(3.0, self.base * 0.25)

    def layout(self, top: float, bottom: float, room: float | None = None) -> _Layout:
        """The lanes between ``top`` and ``bottom``, their type sized for a height of ``room``
        (the tightest of the step's phases: the type stays put as the checks come and go)."""
        n = max(1, self.rec.world_size)
        gap = self.lane_gap
        height = max(1.0, bottom - top)
        lane_h = (height - gap * (n - 1)) / n
        size_h = (min(height, room) - gap * (n - 1)) / n if room else lane_h
        best: tuple[_Fit, list[ParamInfo], bool, tuple[str, ...], int] | None = None
        for header in (False, True):
            cap, num_h = self.rows_that_fit(size_h, header)
            if self.one_a_page:  # a lane of one row: rank and rows, as at 8 ranks
                cap = cap[:1]
            if header and best is not None and num_h < self.ctx.min_px:
                break  # the header's row would take the numbers under the floor
            shown, turns = self.page_of(cap)
            fit = self.fit(num_h, shown, header, self.row_count(cap, header) == 1)
            if best is None or fit.num > best[0].num * 1.05:
                best = (fit, shown, header, turns, self.row_count(cap, header))
        fit, shown, header, turns, rows = best
        num = fit.num
        lane_h = min(lane_h, max(fit.f, num) * (rows * self.line + 1.2))
        block = lane_h * n + gap * (n - 1)
        strip_h = self.strip_height(fit.f) if not fit.data_w else 0.0
        strip = strip_h > 0 and strip_h + gap * 2 <= height - block
        data_top = top
        if strip:  # the rows run across the top; the lanes sit below them
            top, height = top + strip_h + gap * 2, height - strip_h - gap * 2
        y0 = top + (height - block) / 2
        widths = list(fit.widths)
        spare = max(0.0, fit.avail - sum(widths))
        shares = ((2, 0.35), (3, 0.1), (4, 0.35), (5, 0.2)) if header else SHARES
        for i, share in shares:
            widths[i] += spare * share
        cols = [fit.x0]
        for w in widths:
            cols.append(cols[-1] + w)
        lanes = [Rect(fit.x0, y0 + i * (lane_h + gap), cols[-1] - fit.x0, lane_h) for i in range(n)]
        if strip:
            data = Rect(self.pad, data_top, self.ctx.width - 2 * self.pad, strip_h)
        else:
            data = Rect(self.pad, top, fit.data_w, height)
        hidden = 0 if self.paging else len(self.rec.params) - len(shown)
        return _Layout(fit.f, rows, shown, hidden, data, lanes, cols, strip, num, header, turns)

    def row_count(self, shown: list[ParamInfo], header: bool) -> int:
        if self.paging:  # no "+k more" row; one row holds rank and rows when it must
            return max(1, len(shown)) + (1 if header else 0)
        more = 1 if len(shown) < len(self.rec.params) else 0
        return max(2, len(shown) + more) + (1 if header else 0)

    def page_of(self, fit: list[ParamInfo]) -> tuple[list[ParamInfo], tuple[str, ...]]:
        """The tensors of the context's page, as many as ``fit`` holds, and the words that say
        which they are; every tensor and no words when they are not taking turns."""
        params = list(self.rec.params)
        per = 1 if self.one_a_page else max(1, len(fit))
        if not self.paging or per >= len(params):
            return fit, ()
        pages = -(-len(params) // per)
        per = -(-len(params) // pages)  # pages as even as they can be: 4 tensors in 2 and 2
        first = (self.ctx.page % pages) * per
        shown = params[first : first + per]
        names = ", ".join(param_label(p) for p in shown)
        last = f"–{first + len(shown)}" if len(shown) > 1 else ""
        which = f"tensor{'s' if last else ''} {first + 1}{last} of {len(params)}: {names}"
        count = f"{first + 1}{last}/{len(params)}"
        return shown, (
            f"{which} (the others in turns: T for the next)",
            f"{which} · T: next",
            f"{names} ({count}) · T",
        )

    def rows_that_fit(self, lane_h: float, header: bool) -> tuple[list[ParamInfo], float]:
        """The parameters with a row of their own, and the numbers' type the height allows:
        fewer rows rather than numbers under the theme's floor."""
        shown = list(self.rec.params)
        while True:
            rows = self.row_count(shown, header)
            num = lane_h / (rows * self.line + self.lane_pad)
            if num >= self.ctx.min_px or len(shown) <= 1:
                break
            shown = shown[:-1]
        return shown, min(self.base * NUM_GROW, num)

    def fit(self, num: float, shown: list[ParamInfo], header: bool, one: bool = False) -> _Fit:
        """The data table down the left when its type stays readable, else folded."""
        keep_table = max(self.ctx.min_px, self.t.font_px * 0.85)
        fit = self.fit_width(num, shown, True, header, one)
        if fit.f < keep_table or not fit.fits:  # fold the table before the numbers shrink
            fit = self.fit_width(num, shown, False, header, one)
        return fit

    def fit_width(
        self, num: float, shown: list[ParamInfo], table: bool, header: bool, one: bool = False
    ) -> _Fit:
        """The largest type up to ``num`` whose columns (and the data table) fit the width.
        The labels shrink first, to :data:`LABEL_SHARE` of the numbers; then both, the labels
        no smaller than the theme's floor (16 px on a projector), the numbers down to theirs
        (a projector's 24 px); then the labels alone; the numbers last."""
        num_floor = min(self.ctx.min_px, num)
        # tensors taking turns have the width for labels at the floor (the numbers go first)
        keep = max(
            LABEL_FLOOR, self.ctx.min_px if self.paging else min(self.ctx.min_px, LABEL_KEEP)
        )
        f = min(self.base, num)
        fit = self._try(f, num, shown, table, header, one)
        for _ in range(12):  # widths grow in proportion to the type: one guess, then a check
            if fit.fits:
                break
            room = self.ctx.width - 2 * self.pad - (self.pad if fit.data_w else 0)
            need = sum(fit.widths) + fit.data_w
            fixed = sum(self.number_widths(num)) if num > f else 0.0  # they do not shrink
            alone = f * (room - fixed) / max(1.0, need - fixed) * 0.99
            if f > max(keep, num * LABEL_SHARE) + 0.01:
                f = max(keep, num * LABEL_SHARE, alone)
            elif num > num_floor + 0.01:
                k = max(num_floor / num, room / max(1.0, need) * 0.99)
                f, num = max(min(f, keep), f * k), num * k
            elif f > LABEL_FLOOR + 0.01:
                f = max(LABEL_FLOOR, alone)
            else:  # nothing else gives: the numbers go under their floor
                num = num_floor = max(LABEL_FLOOR, num * room / max(1.0, need) * 0.99)
            fit = self._try(f, num, shown, table, header, one)
        return fit

    def _try(
        self, f: float, num: float, shown: list[ParamInfo], table: bool, header: bool, one: bool
    ) -> _Fit:
        data_w = self.data_width(f) if table else 0.0
        x0 = self.pad + data_w + (self.pad if data_w else 0)
        avail = self.ctx.width - self.pad - x0
        return _Fit(f, num, data_w, x0, avail, self.columns(f, shown, num, header, one))

    def row_cells(self, f: float) -> list[str]:
        x, y = self.rec.scenario.get("x", []), self.rec.scenario.get("y", [])
        return [f"{i + 1}: {fmt(a)}, {fmt(b)}" for i, (a, b) in enumerate(zip(x, y, strict=False))]

    def strip_height(self, f: float) -> float:
        """Height of the data rows laid across the stage, or 0 when two lines do not hold them."""
        cells = self.row_cells(f)
        if not cells:
            return 0.0
        font = Font(f, mono=True)
        room = self.ctx.width - 2 * self.pad - self.width("data (x, y)", Font(f)) - f * 1.5
        lines, used = 1, 0.0
        for cell in cells:
            w = self.width(cell, font) + f
            if used + w > room:
                lines, used = lines + 1, 0.0
            used += w
        return 0.0 if lines > 2 else lines * f * LINE * 1.15 + f * 0.5

    def widest_number(self) -> str:
        """A stand-in as wide as the run's widest number (mono digits are all alike)."""
        return "−" + "0" * (max(6, self.rec.value_chars) - 1)

    def number_widths(self, num: float) -> tuple[float, float, float]:
        """The widest local gradient, averaged gradient and new parameter at type ``num``."""
        w = self.width(self.widest_number(), Font(num, mono=True))
        return w, w, w

    def columns(
        self, f: float, shown: list[ParamInfo], num: float, header: bool, one: bool = False
    ) -> list[float]:
        """Widths of the six columns; ``one``: a lane of one row, with no pid and no loss."""
        small = Font(f)
        num_w = self.number_widths(num)[0]
        inner = f * 0.6  # padding inside each column; the numbers' columns keep a pad too
        pad = number_pad(max(f, num)) - f * 0.3
        label = max([self.width(grad_label(p), small) for p in shown] + [f])
        grads = label + f * 0.5 + f * 1.5 + f * 0.5 + num_w
        hub = max(f * 3.2, self.width("then Σ", Font(f, bold=True)) * 1.5 + f)
        value = self.widest_number()
        before = max([self.width(f"{param_label(p)} {value}", small) for p in shown] + [f])
        if header:  # the rows' labels are on the local column's side: not said again
            before = self.width(value, small)
        after = before + f * ARROW_EMS + num_w
        bold = Font(f, bold=True)
        pids = [f"pid {p}" for p in self.rec.pids.values()] or ["pid 999999"]
        rank_w = self.width(f"rank {self.rec.world_size - 1}", bold)
        pid_w = max(self.width(p, small) for p in pids)
        chip_w = max(self.width(shard_label(r), small) for r in self.rec.shards or [[0, 1]])
        loss_w = self.width(f"loss {value}", small)
        if one:  # rank and its rows' chip; one tensor, named above the lanes; its new value
            return self.one_row_columns(f, num_w, rank_w + f * 0.6 + chip_w, hub, inner, pad)
        if header:  # rank and pid over the local column, rows and loss over the averaged one
            left = max(grads, f * 2.3 + rank_w + pid_w)
            right = max(grads - label - f * 0.5, chip_w + f * 1.5 + loss_w)
            return [
                0.0,
                0.0,
                left + inner + pad,
                hub + inner,
                right + inner + pad,
                after + inner + pad,
            ]
        who = f * 1.4 + (rank_w if one else max(rank_w, pid_w))
        shard = (chip_w + f * 0.6 if one else max(chip_w + f * 0.6, loss_w)) + f
        widths = [w + inner for w in (who, shard, grads, hub, grads, after)]
        return [w + (pad if i in (2, 4, 5) else 0.0) for i, w in enumerate(widths)]

    def one_row_columns(
        self, f: float, num_w: float, who: float, hub: float, inner: float, pad: float
    ) -> list[float]:
        """A lane of one row (the tensors take turns, one a page): no row labels (the line
        above the lanes names the tensor), slim bars, no old value before the arrow; at 889 px
        wide the six columns of a row each did not fit 24 px type (they took 1,382 px)."""
        grads = f * (1.0 + 0.4) + num_w
        hub = max(f * 3.2, self.width("then Σ", Font(f, bold=True)) + f)
        after = f * ARROW_EMS + num_w
        return [f * 1.4 + who + inner, 0.0, grads + inner + pad, hub + inner,
                grads + inner + pad, after + inner + pad]  # fmt: skip

    def data_width(self, f: float) -> float:
        texts = self.row_cells(f)
        if not texts:
            return 0.0
        font = Font(f, mono=True)
        widest = max(self.width(s, font) for s in texts[:50])
        return max(widest, self.width("data (x, y)", Font(f))) + f
