"""The form's ``[uneven]`` fields (the uneven-inputs lesson): Join, extra batches, timeout, and
how the script finds a hang."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QFormLayout, QSpinBox, QWidget

from ddp_viz.kinds.uneven.spec import DEBUG, UnevenSpec
from ddp_viz.model.scenario import Scenario


class UnevenFields:
    def __init__(self) -> None:
        self.join = QCheckBox("Join")
        self.join.setToolTip("run the loop inside torch.distributed.algorithms.Join([model])")
        self.extra = QSpinBox()
        self.extra.setRange(0, 1000)  # out of range: shown as an error
        self.extra.setToolTip("how many more batches the last rank has than the others")
        self.timeout = QDoubleSpinBox()
        self.timeout.setRange(0.0, 300.0)
        self.timeout.setDecimals(1)
        self.timeout.setSuffix(" s")
        self.timeout.setToolTip("this run's process-group timeout, 1–30 s: when a stall ends")
        self.debug = QComboBox()
        self.debug.addItems(DEBUG)
        # as wide as its longest choice: the lesson's question names "monitored_barrier",
        # and at the form's width the box showed "monitore"
        self.debug.setMinimumContentsLength(max(len(x) for x in DEBUG))
        self.debug.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.debug.setToolTip(
            "find the hang: none (wait for the timeout), detail (TORCH_DISTRIBUTED_DEBUG=DETAIL "
            "checks each collective), monitored_barrier (names the rank that did not arrive)"
        )
        self.rows: tuple[int, ...] = ()
        self._spec = UnevenSpec()

    def fields(self) -> dict[str, QWidget]:
        return {
            "uneven.join": self.join,
            "uneven.extra": self.extra,
            "uneven.timeout_s": self.timeout,
            "uneven.debug": self.debug,
        }

    def add_to(self, form: QFormLayout) -> None:
        form.addRow("Uneven", self.join)
        form.addRow("Extra batches", self.extra)
        form.addRow("Timeout", self.timeout)
        form.addRow("Find the hang", self.debug)
        self.rows = tuple(range(form.rowCount() - 4, form.rowCount()))

    def connect(self, slot: Any) -> None:
        self.join.toggled.connect(slot)
        self.extra.valueChanged.connect(slot)
        self.timeout.valueChanged.connect(slot)
        self.debug.currentTextChanged.connect(slot)

    def applies(self, scenario: Scenario) -> bool:
        return scenario.table("uneven") is not None

    def load(self, scenario: Scenario) -> None:
        self._spec = scenario.table("uneven") or UnevenSpec()
        self.join.setChecked(self._spec.join)
        self.extra.setValue(self._spec.extra)
        self.timeout.setValue(self._spec.timeout_s)
        self.debug.setCurrentText(self._spec.debug)

    def write(self, raw: dict[str, Any]) -> None:
        raw["uneven"] = self.table()

    def table(self) -> dict[str, Any]:
        return {
            **self._spec.to_dict(),
            "join": self.join.isChecked(),
            "extra": self.extra.value(),
            "timeout_s": self.timeout.value(),
            "debug": self.debug.currentText(),
        }


FIELDS = UnevenFields
