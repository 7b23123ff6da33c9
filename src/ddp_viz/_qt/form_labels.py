"""What the scenario form calls each field in its messages, how it marks the bad ones, reading
a typed number, and guessing the next data row."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QAbstractSpinBox, QTableWidgetItem

from ddp_viz.model import registry

NAMES = {
    "world_size": "World size",
    "steps": "Steps",
    "lr": "Learning rate",
    "init_weight": "Initial weight",
    "init_bias": "Initial bias",
    "ddp.bucket_cap_mb": "Bucket (MiB)",
    "train.accumulate": "Micro-batches",
    "x": "x (data)",
    "y": "y (data)",
}


HELP = "ddp_viz_help"  # a field's own tooltip, shown again once its error is fixed


def set_help(w: Any, text: str) -> None:
    """A field's tooltip when it has no error (an error's reason takes its place meanwhile)."""
    w.setProperty(HELP, text)
    w.setToolTip(text)


def _help(w: Any) -> str:
    tip = w.property(HELP)
    if tip is None:  # the tooltip the field was built with
        tip = w.toolTip()
        w.setProperty(HELP, tip)
    return str(tip)


def label(key: str) -> str:
    if "[" in key:
        col, idx = key.split("[")
        return f"{col} in row {int(idx.rstrip(']')) + 1}"
    kinds = {k: v for kind in registry.kinds() for k, v in kind.field_names.items()}
    return NAMES.get(key) or kinds.get(key, key)


def float_or_text(text: str) -> float | str:
    """A number as typed when it is one, else the text (reported as bad)."""
    try:
        return float(text.strip().replace("−", "-"))
    except ValueError:
        return text


def show_field_errors(form: Any) -> None:
    """Mark every bad field in place with its reason, and list the reasons under the form."""
    bad = f"border: 2px solid {form.theme.bad};"
    for name, w in form._fields().items():
        msg = form.errors.get(name)
        if isinstance(w, QAbstractSpinBox):
            # a style sheet would drop the native arrows: tint the field instead
            pal = QPalette(form.palette())
            if msg:
                tint = QColor(form.theme.bad)
                tint.setAlpha(90)
                pal.setColor(QPalette.ColorRole.Base, tint)
            w.setPalette(pal)
        else:
            w.setStyleSheet(bad if msg else "")
        w.setToolTip(msg or _help(w))
    form.table.blockSignals(True)
    for r in range(form.table.rowCount()):
        for c, key in enumerate(("x", "y")):
            item = form.table.item(r, c)
            if item is None:
                item = QTableWidgetItem("")
                form.table.setItem(r, c, item)
            msg = form.errors.get(f"{key}[{r}]") or (form.errors.get(key) if r == 0 else None)
            bad_bg = QColor(form.theme.bad)
            bad_bg.setAlpha(110)
            item.setBackground(bad_bg if msg else QColor(0, 0, 0, 0))
            item.setToolTip(msg or "")
    form.table.blockSignals(False)
    form.table.setStyleSheet(bad if ("x" in form.errors or "y" in form.errors) else "")
    text = "\n".join(f"{label(k)}: {v}" for k, v in form.errors.items())
    form.error_label.setText(text)
    form.error_label.setStyleSheet(f"color: {form.theme.bad};")
    form.error_label.setVisible(bool(text))


def next_row(pts: list[tuple[float, ...]], n: int) -> tuple[float, float]:
    """A new data row after ``pts``: x one past the last, y on the line through the last two
    (the last y when they share an x; row n + 1 at y 0 with no rows to go by)."""
    x, y = (pts[-1][0] + 1, pts[-1][1]) if pts else (float(n + 1), 0.0)
    if len(pts) >= 2 and pts[-1][0] != pts[-2][0]:
        (x0, y0), (x1, y1) = pts[-2:]
        y = y1 + (y1 - y0) / (x1 - x0) * (x - x1)
    return x, y
