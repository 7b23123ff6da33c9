"""The buckets scene's gradient norms: each tensor's local norm per rank beside the average
every rank got, in as few columns as fit (a part of :class:`scene_panels.Panels`)."""

from __future__ import annotations

from ddp_viz.model.frame import Font, Rect, fmt, wrap_lines
from ddp_viz.model.reference import values_policy
from ddp_viz.model.scenes.base import LINE, FrameBuilder, short_name
from ddp_viz.model.tensors import tensor_norm
from ddp_viz.model.timeline import StepRecord


class NormsPanel(FrameBuilder):
    """The norms panel's drawing; ``Panels`` sets the fields it reads."""

    step: StepRecord | None
    small: Font
    names: list[str]

    def norms_panel(self, box: Rect) -> None:
        """Each tensor's gradient norm: each rank's local one (before the all-reduce) against
        the average (after). In as many columns as the rows under the timeline need, so
        every tensor is on the stage (a projector's 1280×800 left room for none of eight)."""
        st, t, f = self.step, self.t, self.small
        assert st is not None
        lh = f.px * LINE
        self.text(box.x, box.y, self.norms_head(box.w), f, t.text, key="grads.head")
        if not st.has_values:  # a long run's step: its timings came, its gradients did not
            y = box.y + lh
            why = f"Not recorded at step {st.step + 1}. {values_policy()}"
            for line in wrap_lines(why, f, box.w, self.width):
                if y + lh > box.bottom + 0.5:
                    break
                self.text(box.x, y, line, f, t.muted, key="values.policy")
                y += lh
            return
        rows = int((box.h + 0.5) // lh) - 1
        names, cols, with_values = self.norms_grid(rows, box.w)
        gap = self.pad * 0.5
        col_w = (box.w - gap * (cols - 1)) / cols
        for k, name in enumerate(names):
            x = box.x + (k // rows) * (col_w + gap)
            self.norm_row(name, Rect(x, box.y + lh * (1 + k % rows), col_w, lh), with_values)
        if len(names) < len(self.names):
            y = box.y + lh * (1 + len(names))
            self.text(box.x, y, f"… {len(self.names) - len(names)} more", f, t.muted)

    def norms_head(self, room: float) -> str:
        """What the bars are, in the words that fit: local (each rank's own gradient, before
        the all-reduce) or averaged (what the all-reduce gave every rank)."""
        for text in (
            "‖∇‖ of each tensor: thin bars = each rank's local gradient (before the "
            "all-reduce), thick blue = the average every rank got",
            "‖∇‖ per tensor: thin = each rank's local, thick blue = the average",
        ):
            if self.width(text, self.small) <= room:
                return text
        return self.fit("‖∇‖: thin = local per rank, thick blue = averaged", room)

    def norms_grid(self, rows: int, room: float) -> tuple[list[str], int, bool]:
        """(tensors shown, columns, with their values): every tensor, in as few columns as
        fit, with each average's value while there is room for it; else one column cut
        short (the count of the rest is said)."""
        f = self.small
        if rows <= 0:
            return [], 1, False
        bar = f.px * 2.5
        cols = -(-len(self.names) // rows)
        col_w = (room - self.pad * 0.5 * (cols - 1)) / cols
        if col_w >= self.norm_name_w() + self.norm_value_w() + bar:
            return self.names, cols, True
        if col_w >= self.norm_name_w() + bar:
            return self.names, cols, False
        keep = self.names if len(self.names) <= rows else self.names[: max(0, rows - 1)]
        return keep, 1, True

    def norm_name_w(self) -> float:
        return max(self.width(short_name(n), self.small) for n in self.names) + self.pad * 0.5

    def norm_value_w(self) -> float:
        st = self.step
        assert st is not None
        avg = (st.ranks[0].averaged or {}) if 0 in st.ranks else {}
        # at least a 4-digit value's width: the bars keep their length from step to step
        texts = ["0.00000", *(fmt(tensor_norm(avg.get(n))) for n in self.names)]
        return max(self.width(x, self.small) for x in texts) + self.pad * 0.5

    def norm_row(self, name: str, cell: Rect, with_value: bool) -> None:
        """One tensor in ``cell``: its short name, a thin bar per rank's local norm and a
        thick one for the average, scaled to the largest of them; the average's value."""
        st, t, f = self.step, self.t, self.small
        assert st is not None
        lh, y = cell.h, cell.y
        ranks = sorted(st.ranks)
        locals_ = [tensor_norm((st.ranks[r].local or {}).get(name)) for r in ranks]
        avg = tensor_norm((st.ranks[0].averaged or {}).get(name)) if 0 in ranks else float("nan")
        top = max([v for v in [*locals_, avg] if v == v] + [1e-30])
        left = cell.x + self.norm_name_w()
        right = cell.right - (self.norm_value_w() if with_value else self.pad * 0.25)
        self.text(cell.x, y, short_name(name), f, t.muted)
        gap = lh * 0.45 / max(1, len(locals_))
        for i, v in enumerate(locals_):
            if v == v:
                bar = Rect(
                    left, y + lh * 0.08 + gap * i, max(1.0, (right - left) * v / top), gap * 0.7
                )
                self.shape(
                    kind="rect", box=bar, fill=t.muted, key=f"rank{ranks[i]}.localnorm.{name}"
                )
        if avg == avg:
            bar = Rect(left, y + lh * 0.58, max(1.0, (right - left) * avg / top), lh * 0.3)
            self.shape(kind="rect", box=bar, fill=t.accent, key=f"avgnorm.{name}")
            if with_value:
                self.text(
                    right + self.pad * 0.5, y, fmt(avg), f, t.text, key=f"avgnorm.{name}", value=avg
                )
