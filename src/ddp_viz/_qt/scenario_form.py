""" "Try it yourself": world size, steps, learning rate, initial values, bucket size, data rows.
Every change is validated by the pure scenario model; a bad field is marked in place with its
reason; ``validity_changed`` keeps Run disabled until they are fixed."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractSpinBox,
    QBoxLayout,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ddp_viz._qt.form_arrange import FocusKeeper, arrange
from ddp_viz._qt.form_labels import (
    FieldNote,
    RejectedKeys,
    float_or_text,
    label,
    next_row,
    set_help,
    show_field_errors,
)
from ddp_viz._qt.kind_forms import kind_fields
from ddp_viz._qt.train_fields import TrainFields
from ddp_viz.model.dataspec import MAX_EPOCHS
from ddp_viz.model.reference import values_policy
from ddp_viz.model.scenario import MAX_STEPS, MAX_WORLD_SIZE, Scenario, field_errors
from ddp_viz.model.theme import Theme

STEPS_HELP = f"SGD steps, 1–{MAX_STEPS:,}. {values_policy()}"
EPOCHS_HELP = "epochs: the run takes epochs × batches per epoch ÷ micro-batches steps"


class ScenarioForm(QWidget):
    scenario_changed = Signal(object)  # Scenario, or None while invalid
    validity_changed = Signal(bool)
    submitted = Signal()  # Enter in a field: run, if everything is valid

    def __init__(self, scenario: Scenario, theme: Theme, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.theme = theme
        self._loading = False
        self.errors: dict[str, str] = {}
        fm = self.fontMetrics()
        self.world_size = QSpinBox()
        self.world_size.setRange(0, 99)  # out-of-range values are shown as errors, not clamped
        self.steps = QSpinBox()
        self.steps.setRange(0, 10 * MAX_STEPS)
        self.steps.setGroupSeparatorShown(True)
        self.lr = QLineEdit()
        self.init_weight = QLineEdit()
        self.init_bias = QLineEdit()
        self.bucket_cap = QLineEdit()
        self.bucket_cap.setToolTip("DistributedDataParallel(bucket_cap_mb=…): size of a bucket")
        # a sampler's knobs: shown for a scenario with [data] sampler = "distributed"
        self.shuffle = QCheckBox("shuffle")
        self.drop_last = QCheckBox("drop_last")
        self.set_epoch = QCheckBox("set_epoch")
        self.batch_size = QSpinBox()
        self.batch_size.setRange(0, 10_000)
        self.batch_size.setSpecialValueText("all")  # 0: the rank's whole share in one batch
        self.epochs = QSpinBox(maximum=MAX_EPOCHS, specialValueText="–")  # 0 "–": Steps sets it
        self.train = TrainFields()  # the loss's reduction; a kind's [train] knobs are its own
        self.kind_fields = kind_fields()  # each kind of run's fields, shown where they apply
        self.shuffle.setToolTip("DistributedSampler(shuffle=…)")
        self.drop_last.setToolTip("DistributedSampler(drop_last=…): cut the tail, not pad it")
        self.set_epoch.setToolTip("call sampler.set_epoch(epoch) at the start of every epoch")
        self.batch_size.setToolTip("DataLoader(batch_size=…): rows per rank per step")
        self.model_label = QLabel("")
        self.model_label.setWordWrap(True)
        self.model_label.setObjectName("model_label")
        spins = {w: label(n) for n, w in self._fields().items() if isinstance(w, QAbstractSpinBox)}
        self.rejected_keys = RejectedKeys(spins, self)  # a letter no longer vanishes unsaid
        for name, w in self._fields().items():
            w.setObjectName(name)
            w.setAccessibleName(name)
            w.setMinimumWidth(fm.horizontalAdvance("0.0001") + 24)  # fields shrink, data stays
        for box in (
            self.shuffle,
            self.drop_last,
            self.set_epoch,
            *(
                w
                for f in self.kind_fields.values()
                for w in f.fields().values()
                if isinstance(w, QCheckBox | QComboBox)
            ),
        ):
            # never narrower than its longest choice ("monitored_barrier"), in any theme's type
            box.setMinimumWidth(0)
            box.setSizePolicy(QSizePolicy.Policy.Minimum, QSizePolicy.Policy.Fixed)
        # spin boxes show 100,000 whole, beside their arrows
        for spin in (self.world_size, self.steps):
            spin.setMinimumWidth(fm.horizontalAdvance("100,000") + 40)
        self.world_size.setToolTip(f"Ranks (processes), 1–{MAX_WORLD_SIZE}, at most one per row")
        self.steps.setToolTip(STEPS_HELP)

        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels(["x", "y"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setDefaultSectionSize(max(22, int(theme.font_px * 1.7)))
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setAccessibleName("data rows")
        # Tab moves on to the next control (arrows move between cells): no keyboard trap
        self.table.setTabKeyNavigation(False)
        # the columns share the width: no sideways scrolling that hides the y column
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.add_row, self.remove_row = QPushButton("+ row"), QPushButton("− row")
        self.reset = QPushButton("Lesson values")
        self.error_label = QLabel("")
        self.error_label.setWordWrap(True)
        self.error_label.setObjectName("scenario_errors")

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.addRow("World size", self.world_size)
        form.addRow("Steps", self.steps)
        form.addRow("Learning rate", self.lr)
        form.addRow("Initial weight", self.init_weight)
        form.addRow("Initial bias", self.init_bias)
        form.addRow("Bucket (MiB)", self.bucket_cap)
        flags = QVBoxLayout()  # one above the other: side by side they widen the column
        flags.setContentsMargins(0, 0, 0, 0)
        flags.setSpacing(2)
        for box in (self.shuffle, self.drop_last, self.set_epoch):
            flags.addWidget(box)
        first = form.rowCount()  # the sampler's three rows
        form.addRow("Sampler", flags)
        form.addRow("Batch", self.batch_size)
        form.addRow("Epochs", self.epochs)
        self.train.add_to(form)
        for fields in self.kind_fields.values():
            fields.add_to(form)
        self._form = form
        self._sampler_rows = (first, first + 1, first + 2)
        self._sampler_rows += (self.train.loss_row,)
        self._bucket_row = first - 1
        self._training_rows = (1, 2, 3, 4)  # steps, learning rate, initial weight and bias
        # the row buttons sit under the rows they change; the fields column can then shrink
        row_buttons = QHBoxLayout()
        row_buttons.addWidget(self.add_row)
        row_buttons.addWidget(self.remove_row)
        right = QVBoxLayout()
        right.addWidget(self.table, 1)
        right.addLayout(row_buttons)
        left = QVBoxLayout()
        left.addLayout(form)
        left.addWidget(self.reset)
        left.addStretch(1)
        top = QBoxLayout(QBoxLayout.Direction.LeftToRight)  # the table under them: projector
        top.addLayout(left, 3)
        top.addLayout(right, 2)
        self._top = top
        arrange(top, self.table, theme)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.model_label)
        layout.addWidget(self.error_label)
        # the list takes room from below, never from the fields above it
        layout.addStretch(1)
        self.field_note = FieldNote(self)  # the error of the field being edited
        self.focus_keeper = FocusKeeper(self)  # a run from a field: the field keeps its place

        self.world_size.valueChanged.connect(self._on_field_changed)
        self.steps.valueChanged.connect(self._on_field_changed)
        for edit in (self.lr, self.init_weight, self.init_bias, self.bucket_cap):
            edit.textChanged.connect(self._on_field_changed)
            edit.returnPressed.connect(self._on_return_pressed)
        for spin in self.findChildren(QAbstractSpinBox):  # every lesson's, Batch and Epochs too
            spin.lineEdit().returnPressed.connect(self._on_return_pressed)
        for fields in self.kind_fields.values():  # a kind's text fields (PowerSGD ranks) too
            for w in fields.fields().values():
                if isinstance(w, QLineEdit):
                    w.returnPressed.connect(self._on_return_pressed)
        self.table.itemChanged.connect(self._on_field_changed)
        for box in (self.shuffle, self.drop_last, self.set_epoch):
            box.toggled.connect(self._on_field_changed)
        for spin in (self.batch_size, self.epochs):
            spin.valueChanged.connect(self._on_field_changed)
        self.train.connect(self._on_field_changed)
        for fields in self.kind_fields.values():
            fields.connect(self._on_field_changed)
        self.add_row.clicked.connect(self._on_add_row_clicked)
        self.remove_row.clicked.connect(self._on_remove_row_clicked)
        self._lesson = scenario
        self.reset.clicked.connect(lambda: self.set_scenario(self._lesson))
        self.set_scenario(scenario)

    def _fields(self) -> dict[str, QWidget]:
        return {
            "world_size": self.world_size,
            "steps": self.steps,
            "lr": self.lr,
            "init_weight": self.init_weight,
            "init_bias": self.init_bias,
            "ddp.bucket_cap_mb": self.bucket_cap,
            "data.shuffle": self.shuffle,
            "data.drop_last": self.drop_last,
            "data.set_epoch": self.set_epoch,
            "data.batch_size": self.batch_size,
            "data.epochs": self.epochs,
            **self.train.fields(),
            **{k: w for fields in self.kind_fields.values() for k, w in fields.fields().items()},
        }

    def set_theme(self, theme: Theme) -> None:
        self.theme = theme
        arrange(self._top, self.table, theme)
        self._show_errors()  # error colours come from the theme

    # --- values ------------------------------------------------------------------------------
    def set_lesson_scenario(self, s: Scenario) -> None:
        """A new lesson: its scenario is what "Lesson values" restores from now on."""
        self._lesson = s
        self.set_scenario(s)

    def _on_return_pressed(self) -> None:
        if self.valid:
            self.submitted.emit()

    def set_scenario(self, s: Scenario) -> None:
        self._loading = True
        self._model, self._ddp, self._launch = s.model, s.ddp, s.launch
        # no fields of their own yet: kept as the scenario says, so a run keeps its sampler
        self._data, self._train = s.data, s.train
        # a kind's table that sets the run's length (the ring's steps): no Steps of the form's
        self._fixed_length = any(t.fixed_steps(s.world_size) is not None for t in s.kinds.values())
        sampler = s.data.distributed
        for row in self._sampler_rows:
            self._form.setRowVisible(row, sampler)
        self._form.setRowVisible(self._bucket_row, not sampler)  # room: one bucket anyway
        # a kind of run that trains nothing shows its own fields instead of training's
        for row in (*self._training_rows, self._bucket_row):
            self._form.setRowVisible(row, s.trains and (row != self._bucket_row or not sampler))
        self._applying = [f for f in self.kind_fields.values() if f.applies(s)]
        for fields in self.kind_fields.values():
            for row in fields.rows:
                self._form.setRowVisible(row, fields in self._applying)
            fields.load(s)
        for w in (self.table, self.add_row, self.remove_row):
            w.setVisible(s.trains)
        self.shuffle.setChecked(s.data.shuffle)
        self.drop_last.setChecked(s.data.drop_last)
        self.set_epoch.setChecked(s.data.set_epoch)
        self.batch_size.setValue(s.data.batch_size)
        self.epochs.setMinimum(0 if not s.data.epochs else 1)  # no "–" to step down to
        self.epochs.setValue(s.data.epochs)  # "–" when Steps sets the length
        set_help(self.epochs, EPOCHS_HELP if s.data.epochs else "–: Steps sets this run's length")
        self.train.load(s.train)
        self.steps.setEnabled(not s.data.epochs and not self._fixed_length)
        self.epochs.setEnabled(bool(s.data.epochs))
        set_help(self.steps, "Set by Epochs ([data] epochs)" if s.data.epochs else STEPS_HELP)
        linear = s.model.kind == "linear"
        self.model_label.setText(f"Model: {s.model.describe()}")
        self.model_label.setVisible(s.trains)
        for w in (self.init_weight, self.init_bias):
            w.setEnabled(linear)
            set_help(w, "" if linear else "The MLP's initial weights come from its seed")
        self.bucket_cap.setText(f"{s.ddp.bucket_cap_mb:g}")
        self.world_size.setValue(s.world_size)
        self.steps.setValue(s.steps)
        self.lr.setText(f"{s.lr:g}")
        self.init_weight.setText(f"{s.init_weight:g}")
        self.init_bias.setText(f"{s.init_bias:g}")
        self.table.setRowCount(0)
        for xv, yv in zip(s.x, s.y, strict=True):
            self._append_row(f"{xv:g}", f"{yv:g}")
        self._loading = False
        self._on_field_changed()

    def _append_row(self, x: str, y: str) -> None:
        row = self.table.rowCount()
        self.table.insertRow(row)
        for col, text in ((0, x), (1, y)):
            item = QTableWidgetItem(text)
            # right-aligned numbers keep clear of the row numbers in the header
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.setItem(row, col, item)

    def raw(self) -> dict[str, Any]:
        def col(c: int) -> list[str]:
            return [
                (self.table.item(r, c).text() if self.table.item(r, c) else "")
                for r in range(self.table.rowCount())
            ]

        raw = {
            "x": col(0),
            "y": col(1),
            "world_size": self.world_size.value(),
            "steps": self.steps.value(),
            "lr": self.lr.text(),
            "init_weight": self.init_weight.text(),
            "init_bias": self.init_bias.text(),
            "model": self._model.to_dict(),
            "ddp": {**self._ddp.to_dict(), "bucket_cap_mb": float_or_text(self.bucket_cap.text())},
            "data": self._data_table(),
            "train": self.train.table(),
            "launch": self._launch.to_dict(),
        }
        for fields in self._applying:
            fields.write(raw)
        if self._fixed_length:
            raw.pop("steps", None)  # the kind's table sets the run's length
        if self._data.epochs:  # the epochs decide the length, whatever the world size
            raw.pop("steps", None)
        return raw

    def _data_table(self) -> dict[str, Any]:
        table = self._data.to_dict()
        if self._data.distributed:
            table.update(
                shuffle=self.shuffle.isChecked(),
                drop_last=self.drop_last.isChecked(),
                set_epoch=self.set_epoch.isChecked(),
                batch_size=self.batch_size.value(),
                epochs=self.epochs.value() if self._data.epochs else 0,
            )
        return table

    def scenario(self) -> Scenario | None:
        if self.errors:
            return None
        return Scenario.from_mapping(self.raw())

    @property
    def valid(self) -> bool:
        return not self.errors

    # --- validation --------------------------------------------------------------------------
    def _on_field_changed(self, *_: object) -> None:
        if self._loading:
            return
        was_valid = self.valid
        self.errors = field_errors(self.raw())
        self._show_errors()
        # the length epochs or a kind's table give, for the world size
        if not self.errors and (self._data.epochs or self._fixed_length):
            self.steps.blockSignals(True)
            self.steps.setValue(Scenario.from_mapping(self.raw()).steps)
            self.steps.blockSignals(False)
        if self.valid != was_valid:
            self.validity_changed.emit(self.valid)
        self.scenario_changed.emit(self.scenario())

    def _show_errors(self) -> None:
        show_field_errors(self)

    def _on_add_row_clicked(self) -> None:
        """A valid row, y on the line through the last two: an empty y was an error at once,
        and its message moved the buttons under the pointer."""
        n = self.table.rowCount()
        try:
            pts = [tuple(float(self.table.item(r, c).text()) for c in (0, 1)) for r in range(n)]
        except (ValueError, AttributeError):  # a cell being edited: no guess
            pts = []
        x, y = next_row(pts, n)
        self._append_row(f"{x:g}", f"{y:g}")
        self.table.setCurrentCell(n, 1)
        self._on_field_changed()

    def _on_remove_row_clicked(self) -> None:
        row = self.table.currentRow()
        if row < 0:
            row = self.table.rowCount() - 1
        if row >= 0:
            self.table.removeRow(row)
            self._on_field_changed()

    def set_enabled_for_run(self, enabled: bool) -> None:
        if not enabled:
            self.focus_keeper.leave()
        for w in (*self._fields().values(), self.table, self.add_row, self.remove_row, self.reset):
            w.setEnabled(enabled)
        if enabled and self._model.kind != "linear":
            self.init_weight.setEnabled(False)
            self.init_bias.setEnabled(False)
        if enabled and (self._data.epochs or self._fixed_length):
            self.steps.setEnabled(False)
        self.epochs.setEnabled(enabled and bool(self._data.epochs))
        if enabled:
            self.focus_keeper.come_back()
