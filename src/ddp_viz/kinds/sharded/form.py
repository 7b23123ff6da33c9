"""The form's ``[sharded]`` fields: steps, the hidden width, rows per rank and Adam's learning
rate. The run trains its own model, so the training fields hide."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QDoubleSpinBox, QFormLayout, QSpinBox, QWidget

from ddp_viz.kinds.sharded.model import KIND, ShardedSpec
from ddp_viz.model.scenario import Scenario


class ShardedFields:
    def __init__(self) -> None:
        self.steps = QSpinBox()
        self.steps.setRange(0, 100_000)  # out of range: shown as an error
        self.steps.setToolTip("Adam steps every way trains, 1–200")
        self.width = QSpinBox()
        self.width.setRange(0, 10_000)
        self.width.setToolTip("the hidden layers' width, 8–512: the middle weight is width × width")
        self.batch = QSpinBox()
        self.batch.setRange(0, 10_000)
        self.batch.setToolTip("rows each rank trains on per step, 1–256")
        self.lr = QDoubleSpinBox()
        self.lr.setDecimals(4)
        self.lr.setRange(0.0, 100.0)
        self.lr.setToolTip("Adam's learning rate, above 0 and at most 1")
        self.rows: tuple[int, ...] = ()
        self._spec = ShardedSpec()

    def fields(self) -> dict[str, QWidget]:
        return {
            f"{KIND}.steps": self.steps,
            f"{KIND}.width": self.width,
            f"{KIND}.batch": self.batch,
            f"{KIND}.lr": self.lr,
        }

    def add_to(self, form: QFormLayout) -> None:
        form.addRow("Steps", self.steps)
        form.addRow("Hidden width", self.width)
        form.addRow("Rows per rank", self.batch)
        form.addRow("Learning rate", self.lr)
        self.rows = tuple(range(form.rowCount() - 4, form.rowCount()))

    def connect(self, slot: Callable[..., object]) -> None:
        for box in (self.steps, self.width, self.batch, self.lr):
            box.valueChanged.connect(slot)

    def applies(self, scenario: Scenario) -> bool:
        return scenario.table(KIND) is not None

    def load(self, scenario: Scenario) -> None:
        self._spec = scenario.table(KIND) or ShardedSpec()
        self.steps.setValue(self._spec.steps)
        self.width.setValue(self._spec.width)
        self.batch.setValue(self._spec.batch)
        self.lr.setValue(self._spec.lr)

    def write(self, raw: dict[str, Any]) -> None:
        raw[KIND] = {
            **self._spec.to_dict(),
            "steps": self.steps.value(),
            "width": self.width.value(),
            "batch": self.batch.value(),
            "lr": self.lr.value(),
        }


FIELDS = ShardedFields
