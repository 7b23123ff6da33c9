"""The form's ``[mixed_precision]`` fields: steps, the spike's step, the scaler's growth interval
and first scale, and how small the tiny inputs are. The run trains its own model, so the
training fields hide."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QDoubleSpinBox, QFormLayout, QLineEdit, QSpinBox, QWidget

from ddp_viz.kinds.mixed_precision.model import KIND, PrecisionSpec
from ddp_viz.model.scenario import Scenario


class PrecisionFields:
    def __init__(self) -> None:
        self.steps = QSpinBox()
        self.steps.setRange(0, 100_000)  # out of range: shown as an error
        self.steps.setToolTip("optimizer steps every arm trains, 1–200")
        self.spike = QSpinBox()
        self.spike.setRange(0, 100_000)
        self.spike.setToolTip("the step whose last rank's rows overflow float16 (0: none)")
        self.growth = QSpinBox()
        self.growth.setRange(0, 100_000)
        self.growth.setToolTip("GradScaler's growth_interval: steps without inf before it doubles")
        self.scale = QDoubleSpinBox()
        self.scale.setRange(0, 2.0**30)
        self.scale.setDecimals(0)
        self.scale.setToolTip("GradScaler's init_scale (torch's default is 65536)")
        self.tiny = QLineEdit()
        self.tiny.setToolTip("the last four inputs are multiplied by this: small gradients")
        self.rows: tuple[int, ...] = ()
        self._spec = PrecisionSpec()

    def fields(self) -> dict[str, QWidget]:
        return {
            f"{KIND}.steps": self.steps,
            f"{KIND}.spike_step": self.spike,
            f"{KIND}.growth_interval": self.growth,
            f"{KIND}.init_scale": self.scale,
            f"{KIND}.tiny": self.tiny,
        }

    def add_to(self, form: QFormLayout) -> None:
        form.addRow("Steps", self.steps)
        form.addRow("Spike at step", self.spike)
        form.addRow("Growth interval", self.growth)
        form.addRow("Initial scale", self.scale)
        form.addRow("Tiny inputs ×", self.tiny)
        self.rows = tuple(range(form.rowCount() - 5, form.rowCount()))

    def connect(self, slot: Any) -> None:
        self.steps.valueChanged.connect(slot)
        self.spike.valueChanged.connect(slot)
        self.growth.valueChanged.connect(slot)
        self.scale.valueChanged.connect(slot)
        self.tiny.textChanged.connect(slot)

    def applies(self, scenario: Scenario) -> bool:
        return scenario.table(KIND) is not None

    def load(self, scenario: Scenario) -> None:
        self._spec = scenario.table(KIND) or PrecisionSpec()
        self.steps.setValue(self._spec.steps)
        self.spike.setValue(self._spec.spike_step)
        self.growth.setValue(self._spec.growth_interval)
        self.scale.setValue(self._spec.init_scale)
        self.tiny.setText(f"{self._spec.tiny:g}")

    def write(self, raw: dict[str, Any]) -> None:
        raw[KIND] = self.table()

    def table(self) -> dict[str, Any]:
        text = self.tiny.text().strip()
        try:
            tiny: Any = float(text)
        except ValueError:
            tiny = text  # the spec's parser names the field
        return {
            **self._spec.to_dict(),
            "steps": self.steps.value(),
            "spike_step": self.spike.value(),
            "growth_interval": self.growth.value(),
            "init_scale": self.scale.value(),
            "tiny": tiny,
        }


FIELDS = PrecisionFields
