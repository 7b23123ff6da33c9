"""The form's fields of a kind whose table is plain values (``model.plain_table``), made from
the table's declaration: a spin box for a whole number, a decimal box for a number, a check
box for a flag, each under its knob's label with its tooltip, in the table's order. A kind
with a ``form.py`` of its own uses that instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QFormLayout, QSpinBox, QWidget

from ddp_viz.model.plain_table import Knob, PlainTable
from ddp_viz.model.scenario import Scenario


def _widget(kind: type, k: Knob) -> QWidget:
    box: QWidget
    if kind is bool:
        box = QCheckBox()
    elif kind is int:
        box = QSpinBox()
        box.setRange(0, 10_000)  # out of range: shown as the form's error, not clamped
    else:
        box = QDoubleSpinBox()
        box.setRange(0.0, 10_000.0)
        box.setDecimals(3)
        if k.unit:
            box.setSuffix(f" {k.unit}")
    box.setToolTip(k.tip)
    return box


class PlainFields:
    """A :class:`~ddp_viz._qt.kind_forms.KindFields` for ``spec``'s table."""

    def __init__(self, spec: type[PlainTable]) -> None:
        self.spec_type, self.table = spec, spec.TABLE
        self.shown = spec.shown()
        self.boxes = {key: _widget(kind, k) for key, kind, k in self.shown}
        self.rows: tuple[int, ...] = ()
        self._spec: PlainTable = spec()

    def fields(self) -> dict[str, QWidget]:
        return {f"{self.table}.{key}": box for key, box in self.boxes.items()}

    def add_to(self, form: QFormLayout) -> None:
        for key, _, k in self.shown:
            form.addRow(k.label, self.boxes[key])
        n = len(self.shown)
        self.rows = tuple(range(form.rowCount() - n, form.rowCount()))

    def connect(self, slot: Callable[..., object]) -> None:
        for box in self.boxes.values():
            signal = box.toggled if isinstance(box, QCheckBox) else box.valueChanged  # type: ignore[attr-defined]
            signal.connect(slot)

    def applies(self, scenario: Scenario) -> bool:
        return scenario.table(self.table) is not None

    def load(self, scenario: Scenario) -> None:
        found = scenario.table(self.table)
        self._spec = found if isinstance(found, self.spec_type) else self.spec_type()
        for key, box in self.boxes.items():
            value = getattr(self._spec, key)
            if isinstance(box, QCheckBox):
                box.setChecked(bool(value))
            else:
                box.setValue(value)  # type: ignore[attr-defined]

    def write(self, raw: dict[str, Any]) -> None:
        raw[self.table] = {
            **self._spec.to_dict(),
            **{key: _value(b) for key, b in self.boxes.items()},
        }


def _value(box: QWidget) -> Any:
    return box.isChecked() if isinstance(box, QCheckBox) else box.value()  # type: ignore[attr-defined]
