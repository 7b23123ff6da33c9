"""The precision scene: one panel a phase, every number from the run.

1. dtypes: what rank 0 saw in each arm (activations, parameters, ``.grad``, DDP's bucket, what
   went on the wire) and whether every rank saw the same;
2. loss: each autocast arm's loss and its largest parameter difference from float32;
3. scaler: the GradScaler's scale, then one row per rank: its own gradient finite or inf, the
   averaged one, and whether its optimizer stepped; the verdict that every rank did the same;
4. wire: float32, fp16 and bf16 all-reduces side by side: bytes, error, values lost to 0.
"""

from __future__ import annotations

from ddp_viz.kinds.mixed_precision.model import (
    AUTOCAST_ARMS,
    KIND,
    SCALER_ARM,
    SHARDED_ARMS,
    WIRE_ARMS,
    PrecisionRecord,
    arm,
    spec_of,
)
from ddp_viz.kinds.mixed_precision.report import skip_line
from ddp_viz.model.frame import Font, Rect, StageFrame, fmt, wrap_lines
from ddp_viz.model.scenes.base import LINE, FrameBuilder, Line
from ddp_viz.model.scenes.context import SceneContext
from ddp_viz.model.timeline import Cursor, RunRecord

TITLES = ("what autocast changes", "against float32", "loss scaling", "precision on the wire")
PHASES = ("shards", "local", "allreduce", "step")
DTYPE_COLS = (("activations", "activation"), ("params", "param"), (".grad", "grad"))
DTYPE_COLS += (("bucket", "bucket"), ("on the wire", "wire"))
SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}

Cell = tuple[str, str, str, float | None]  # text, colour, key, value


def human_bytes(n: float) -> str:
    return f"{n / 1e3:.2f} kB" if n >= 1e4 else f"{n:,.0f} B"


class _Builder(FrameBuilder):
    def __init__(self, rec: RunRecord, cursor: Cursor, ctx: SceneContext) -> None:
        super().__init__(ctx)
        self.rec, self.cursor, self.phase = rec, cursor, cursor.phase
        self.part: PrecisionRecord = rec.parts[KIND]
        self.spec = spec_of(rec)
        self.world = rec.world_size
        self.small = Font(max(ctx.min_px, self.base))  # few rows: the tables in body type
        self.lh = self.small.px * LINE

    def build(self) -> StageFrame:
        step = self.cursor.step
        left = f"Step {step + 1} of {self.spec.steps} · {TITLES[self.phase]}"
        lines = self.title(left, [f"{self.world} ranks · rank 0's view", ""], self.t.muted)
        caption = self.caption(PHASES[self.phase], False, 2)
        y = self.pad * 0.6
        for line in lines:
            self.emit(line, y)
            y += line.height
        room = self.ctx.height - y - self.pad - self.need() * self.lh
        if sum(line.height for line in caption) <= room:  # whole, or not at all
            for line in caption:
                self.emit(line, y)
                y += line.height
        area = Rect(self.pad, y + self.pad * 0.4, self.ctx.width - 2 * self.pad, 0)
        [self.dtypes, self.against, self.scaler, self.on_wire][self.phase](area, step)
        return self.frame

    def need(self) -> float:
        """Lines the phase's panel takes (the caption gives way to it)."""
        return [7, 5, self.world + 4, 12 if self.spec.fsdp else 8][self.phase]

    def table(self, area: Rect, heads: list[str], rows: list[tuple[str, str, list[Cell]]]) -> float:
        """Rows of a label then cells; columns as wide as their widest text and a gap, the
        last ones left out when the stage is too narrow. Returns the y under the table."""
        f = self.small
        gap = f.px * 1.2
        label_w = max(self.width(label, f) for label, _, _ in rows) + gap
        widths = [
            max([self.width(h, f)] + [self.width(r[2][i][0], f) for r in rows]) + gap
            for i, h in enumerate(heads)
        ]
        shown = len(heads)
        while shown and label_w + sum(widths[:shown]) > area.w:
            shown -= 1
        xs = [area.x + label_w]
        for w in widths[: shown - 1]:
            xs.append(xs[-1] + w)
        y = area.y
        for h, x in zip(heads[:shown], xs, strict=False):
            self.text(x, y, h, f, self.t.muted)
        for label, color, cells in rows:
            y += self.lh
            self.text(area.x, y, label, f, color)
            for (text, ink, key, value), x in zip(cells[:shown], xs, strict=False):
                self.text(x, y, text, f, ink, key=key, value=value)
        return y + self.lh

    def note(self, y: float, text: str, color: str, key: str = "", most: int = 2) -> float:
        """``text`` wrapped, at most ``most`` lines and as many as the stage has room for; a
        note that loses lines ends its last one in "…" (a cut sentence otherwise reads as
        whole: gloo's or torch's error stops mid-clause)."""
        f = self.small
        lines = wrap_lines(text, f, self.ctx.width - 2 * self.pad, self.width)
        kept = []
        for line in lines[:most]:
            if y + self.lh * (len(kept) + 1) > self.ctx.height - self.pad * 0.5:
                break
            kept.append(line)
        for i, line in enumerate(kept):
            if i == len(kept) - 1 and len(kept) < len(lines):
                line = self.cut_short(Line(line, f, color)).text
            self.text(self.pad, y, line, f, color, key=key)
            y += self.lh
            key = ""
        return y

    def dtypes(self, area: Rect, step: int) -> None:
        rows = []
        same = True
        for arm_id in AUTOCAST_ARMS + WIRE_ARMS[1:]:
            ranks = self.part.at(arm_id, step)
            e = ranks.get(0)
            seen = dict(e.dtypes) if e else {}
            same = same and all(r.dtypes == seen for r in ranks.values())
            cells: list[Cell] = []
            for _, k in DTYPE_COLS:
                d = seen.get(k, "—")
                ink = self.t.text if d == "float32" else self.t.accent
                cells.append((d, ink, f"dtype.{arm_id}.{k}", None))
            rows.append((arm(arm_id).label, self.t.text, cells))
        y = self.table(area, [h for h, _ in DTYPE_COLS], rows)
        said = (
            f"✓ every one of the {self.world} ranks saw the same dtypes"
            if same
            else "✗ the ranks saw different dtypes"
        )
        self.note(y + self.lh * 0.3, said, self.t.ok if same else self.t.bad, key="check.dtypes")

    def against(self, area: Rect, step: int) -> None:
        base = self.part.loss("fp32", step)
        rows = []
        for arm_id in AUTOCAST_ARMS:
            loss = self.part.loss(arm_id, step)
            e = self.part.at(arm_id, step).get(0)
            d = None if loss is None or base is None else loss - base
            cells: list[Cell] = [
                (fmt(loss, 6), self.t.text, f"loss.{arm_id}", loss),
                (fmt(d, 2), self.t.muted, f"dloss.{arm_id}", d),
                (fmt(e.param_diff if e else None, 2), self.t.text, f"dparam.{arm_id}", None),
            ]
            rows.append((arm(arm_id).label, self.t.text, cells))
        heads = ["loss", "− float32's", "largest |p − p₃₂|"]
        y = self.table(area, heads, rows)
        self.note(
            y + self.lh * 0.3, "loss: the mean of the ranks'; |p − p₃₂|: rank 0", self.t.muted
        )

    def scaler(self, area: Rect, step: int) -> None:
        ranks = self.part.at(SCALER_ARM, step)
        e = ranks.get(0)
        f = self.small
        y = area.y
        if e is not None:
            text = f"scale {e.scale:g} → {e.next_scale:g}"
            self.text(area.x, y, text, Font(f.px, bold=True), self.t.text, key="scale")
            y += self.lh
        rows = []
        for r in range(self.world):
            ev = ranks.get(r)
            if ev is None:
                rows.append(
                    (f"rank {r}", self.t.rank_color(r), [("…", self.t.muted, "", None)] * 3)
                )
                continue
            local = (
                "inf" if ev.local_inf else "finite",
                self.t.bad if ev.local_inf else self.t.text,
            )
            avg = (
                "inf" if ev.averaged_inf else "finite",
                self.t.bad if ev.averaged_inf else self.t.text,
            )
            did = ("stepped", self.t.text) if ev.stepped else ("skipped", self.t.bad)
            cells: list[Cell] = [
                (local[0], local[1], f"local.{r}", None),
                (avg[0], avg[1], f"averaged.{r}", None),
                (did[0], did[1], f"stepped.{r}", None),
            ]
            rows.append((f"rank {r}", self.t.rank_color(r), cells))
        y = self.table(Rect(area.x, y, area.w, 0), ["own grads", "averaged", "optimizer"], rows)
        v = self.part.skipped(step, self.world)
        if not v.whole:
            return
        if not v.together:
            said, ink = f"✗ ranks {v.skipped} skipped, ranks {v.stepped} stepped", self.t.bad
        elif v.skipped:
            said, ink = f"✓ every one of the {self.world} ranks skipped this step", self.t.ok
        else:
            said, ink = f"✓ every one of the {self.world} ranks stepped", self.t.ok
        y = self.note(y + self.lh * 0.2, said, ink, key="check.skip", most=1)
        # Steps 1 to this one only: a later skip is the answer the quiz asks the learner to
        # predict, and scrubbing back must not show it.
        n = min(self.rec.parts[KIND].complete(self.world), step + 1)
        self.note(y, skip_line(self.part, n, self.world).removeprefix("✓ "), self.t.muted, most=1)

    def on_wire(self, area: Rect, step: int) -> None:
        rows = []
        for arm_id in WIRE_ARMS:
            e = self.part.at(arm_id, step).get(0)
            label = arm(arm_id).label if arm_id != "fp32" else "fp32 on the wire"
            if e is None:
                continue
            cells: list[Cell] = [
                (human_bytes(e.sent), self.t.text, f"bytes.{arm_id}", float(e.sent)),
                (f"{e.error:.1e}", self.t.text, f"error.{arm_id}", e.error),
                (
                    str(e.underflow),
                    self.t.bad if e.underflow else self.t.text,
                    f"underflow.{arm_id}",
                    float(e.underflow),
                ),
            ]
            rows.append((label, self.t.text, cells))
        if not rows:
            return
        heads = ["bytes a rank sent", "rel. error", "sent as 0"]
        y = self.table(area, heads, rows)
        y = self.by_rank(y + self.lh * 0.3, step)
        y = self.fsdp(Rect(area.x, y + self.lh * 0.3, area.w, 0), step)
        refused = self.part.refused
        if refused is not None and refused.message:
            said = f"bf16_compress_hook by its own name: {refused.message}"
            self.note(y + self.lh * 0.3, said, self.t.muted, key="refused")

    def fsdp(self, area: Rect, step: int) -> float:
        """FSDP2 with and without bf16 parameters: rank 0's bytes gathered and reduced."""
        rows = []
        for a in SHARDED_ARMS:
            e = self.part.fsdp_at(a.id, step).get(0)
            if e is None:
                continue
            gather, reduce = e.dtypes.get("gather", "—"), e.dtypes.get("reduce", "—")
            cells: list[Cell] = [
                (human_bytes(e.gathered), self.t.text, f"gathered.{a.id}", float(e.gathered)),
                (human_bytes(e.reduced), self.t.text, f"reduced.{a.id}", float(e.reduced)),
                (
                    f"{SHORT.get(gather, gather)} / {SHORT.get(reduce, reduce)}",
                    self.t.muted,
                    "",
                    None,
                ),
            ]
            rows.append((a.label, self.t.text, cells))
        if not rows:
            return area.y
        return self.table(area, ["gathered", "reduced", "gather / reduce"], rows)

    def by_rank(self, y: float, step: int) -> float:
        """Every rank's count of values fp16 sent as 0, in the rank's colour, wrapped."""
        f = self.small
        head = "fp16 sent as 0, by rank:"
        x = self.pad + self.width(head, f) + f.px * 0.6
        self.text(self.pad, y, head, f, self.t.muted)
        ranks = self.part.at("wire_fp16", step)
        for r in range(self.world):
            e = ranks.get(r)
            text = f"r{r} {e.underflow if e else '…'}"
            w = self.width(text, f)
            if x + w > self.ctx.width - self.pad:
                x, y = self.pad + f.px, y + self.lh
            value = float(e.underflow) if e else None
            self.text(x, y, text, f, self.t.rank_color(r), key=f"underflow.r{r}", value=value)
            x += w + f.px * 0.9
        return y + self.lh


def build(
    record: RunRecord | None, cursor: Cursor, progress: float, ctx: SceneContext
) -> StageFrame:
    """The dtypes each arm saw; each autocast arm's loss and parameters against float32; the
    GradScaler's scale and, per rank, its own gradient, the averaged one and whether it
    stepped; float32, float16 and bfloat16 on the wire: bytes, error, values sent as 0."""
    assert record is not None  # an empty stage is drawn by stage_frame for every scene
    if KIND not in record.parts:
        b = FrameBuilder(ctx)
        text = "This lesson trains five ways side by side: press Run."
        b.text(b.pad, b.pad, text, Font(b.base), b.t.muted)
        return b.frame
    return _Builder(record, cursor, ctx).build()
