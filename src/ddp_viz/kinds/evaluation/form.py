"""The form's ``[evaluation]`` fields: held-out rows, the sampler's shuffle, whether rank 0
evaluates alone through the wrapper, and the timeout that ends that wait. The run trains its
own model, so the training fields hide."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QFormLayout, QSpinBox, QWidget

from ddp_viz.kinds.evaluation.spec import KIND, EvalSpec
from ddp_viz.model.scenario import Scenario


class EvalFields:
    def __init__(self) -> None:
        self.rows_held = QSpinBox()
        self.rows_held.setRange(0, 10_000)  # out of range: shown as an error
        self.rows_held.setToolTip(
            "held-out rows the ranks evaluate, 2–500 (try one that the ranks do not divide)"
        )
        self.shuffle = QCheckBox("shuffle")
        self.shuffle.setToolTip("DistributedSampler(shuffle=…) for the held-out rows")
        self.hang = QCheckBox("rank 0 alone through DDP")
        self.hang.setToolTip("rank 0 evaluates through the DDP wrapper while the others wait")
        self.timeout = QDoubleSpinBox()
        self.timeout.setRange(0.0, 300.0)
        self.timeout.setDecimals(1)
        self.timeout.setSuffix(" s")
        self.timeout.setToolTip("the process group's timeout, 1–30 s: when the wait ends")
        self.rows: tuple[int, ...] = ()
        self._spec = EvalSpec()

    def fields(self) -> dict[str, QWidget]:
        return {
            f"{KIND}.eval_rows": self.rows_held,
            f"{KIND}.shuffle": self.shuffle,
            f"{KIND}.hang": self.hang,
            f"{KIND}.timeout_s": self.timeout,
        }

    def add_to(self, form: QFormLayout) -> None:
        form.addRow("Held-out rows", self.rows_held)
        form.addRow("Sampler", self.shuffle)
        form.addRow("Rank 0 only", self.hang)
        form.addRow("Timeout", self.timeout)
        self.rows = tuple(range(form.rowCount() - 4, form.rowCount()))

    def connect(self, slot: Any) -> None:
        self.rows_held.valueChanged.connect(slot)
        self.shuffle.toggled.connect(slot)
        self.hang.toggled.connect(slot)
        self.timeout.valueChanged.connect(slot)

    def applies(self, scenario: Scenario) -> bool:
        return scenario.table(KIND) is not None

    def load(self, scenario: Scenario) -> None:
        self._spec = scenario.table(KIND) or EvalSpec()
        self.rows_held.setValue(self._spec.eval_rows)
        self.shuffle.setChecked(self._spec.shuffle)
        self.hang.setChecked(self._spec.hang)
        self.timeout.setValue(self._spec.timeout_s)

    def write(self, raw: dict[str, Any]) -> None:
        raw[KIND] = self.table()

    def table(self) -> dict[str, Any]:
        return {
            **self._spec.to_dict(),
            "eval_rows": self.rows_held.value(),
            "shuffle": self.shuffle.isChecked(),
            "hang": self.hang.isChecked(),
            "timeout_s": self.timeout.value(),
        }


FIELDS = EvalFields
