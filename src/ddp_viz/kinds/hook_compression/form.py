"""The form's ``[hook_compression]`` fields: steps, PowerSGD's ranks, warm-up and error feedback,
and the hidden layers' width. The run trains its own model, so the training fields hide."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QComboBox, QFormLayout, QLineEdit, QSpinBox, QWidget

from ddp_viz.kinds.hook_compression.model import FEEDBACK, KIND, HooksSpec
from ddp_viz.model.scenario import Scenario


class HooksFields:
    def __init__(self) -> None:
        self.steps = QSpinBox()
        self.steps.setRange(0, 100_000)  # out of range: shown as an error
        self.steps.setToolTip("optimizer steps every variant trains, 1–2000")
        self.ranks = QLineEdit()
        self.ranks.setToolTip("PowerSGD's matrix approximation ranks, e.g. 1, 4 (up to four)")
        self.warmup = QSpinBox()
        self.warmup.setRange(0, 100_000)
        self.warmup.setToolTip("start_powerSGD_iter: plain all-reduce steps before compressing")
        self.feedback = QComboBox()
        self.feedback.addItems(FEEDBACK)
        self.feedback.setToolTip("PowerSGD's use_error_feedback: on, off, or one variant of each")
        self.width = QSpinBox()
        self.width.setRange(0, 10_000)
        self.width.setToolTip("the hidden layers' width: the middle weight is width × width")
        self.rows: tuple[int, ...] = ()
        self._spec = HooksSpec()

    def fields(self) -> dict[str, QWidget]:
        return {
            f"{KIND}.steps": self.steps,
            f"{KIND}.ranks": self.ranks,
            f"{KIND}.warmup": self.warmup,
            f"{KIND}.error_feedback": self.feedback,
            f"{KIND}.width": self.width,
        }

    def add_to(self, form: QFormLayout) -> None:
        form.addRow("Steps", self.steps)
        form.addRow("PowerSGD ranks", self.ranks)
        form.addRow("Warm-up steps", self.warmup)
        form.addRow("Error feedback", self.feedback)
        form.addRow("Hidden width", self.width)
        self.rows = tuple(range(form.rowCount() - 5, form.rowCount()))

    def connect(self, slot: Any) -> None:
        self.steps.valueChanged.connect(slot)
        self.ranks.textChanged.connect(slot)
        self.warmup.valueChanged.connect(slot)
        self.feedback.currentIndexChanged.connect(slot)
        self.width.valueChanged.connect(slot)

    def applies(self, scenario: Scenario) -> bool:
        return scenario.table(KIND) is not None

    def load(self, scenario: Scenario) -> None:
        self._spec = scenario.table(KIND) or HooksSpec()
        self.steps.setValue(self._spec.steps)
        self.ranks.setText(", ".join(str(r) for r in self._spec.ranks))
        self.warmup.setValue(self._spec.warmup)
        self.feedback.setCurrentText(self._spec.error_feedback)
        self.width.setValue(self._spec.width)

    def write(self, raw: dict[str, Any]) -> None:
        raw[KIND] = self.table()

    def table(self) -> dict[str, Any]:
        text = self.ranks.text().replace(",", " ").split()
        ranks: list[Any] = [int(t) if t.isdigit() else t for t in text]
        return {
            **self._spec.to_dict(),
            "steps": self.steps.value(),
            "ranks": ranks,
            "warmup": self.warmup.value(),
            "error_feedback": self.feedback.currentText(),
            "width": self.width.value(),
        }


FIELDS = HooksFields
