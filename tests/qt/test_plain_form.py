"""The form's fields made from a table of plain values (``_qt.plain_form``): one widget a
labelled key, of the key's type, loaded from the scenario and written back with what the
learner changed; the resuming kind's form is made this way."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QFormLayout, QSpinBox, QWidget

from ddp_viz._qt.kind_forms import kind_fields
from ddp_viz._qt.plain_form import PlainFields
from ddp_viz.kinds.resuming.spec import RestartSpec
from ddp_viz.model.course import load_lesson
from tests.core.test_plain_table import Toy


def test_each_labelled_key_gets_a_widget_of_its_type_and_writes_back(qtbot) -> None:
    fields = PlainFields(Toy)
    holder = QWidget()
    qtbot.addWidget(holder)
    form = QFormLayout(holder)
    form.addRow("before", QWidget())
    fields.add_to(form)
    assert fields.rows == (1, 2, 3)
    boxes = fields.fields()
    assert list(boxes) == ["toy.steps", "toy.wait", "toy.fast"]
    assert isinstance(boxes["toy.steps"], QSpinBox) and boxes["toy.steps"].toolTip() == "how many"
    assert isinstance(boxes["toy.wait"], QDoubleSpinBox)
    assert boxes["toy.wait"].suffix() == " seconds"
    assert isinstance(boxes["toy.fast"], QCheckBox)
    changed = []
    fields.connect(lambda *_: changed.append(1))
    boxes["toy.steps"].setValue(7)
    boxes["toy.wait"].setValue(12.5)
    boxes["toy.fast"].setChecked(True)
    assert len(changed) == 3
    raw: dict = {}
    fields.write(raw)
    # the keys the form does not show keep the table's values
    assert raw["toy"] == {**Toy().to_dict(), "steps": 7, "wait": 12.5, "fast": True}


def test_the_resuming_lesson_loads_into_its_made_form_and_round_trips(qtbot) -> None:
    fields = kind_fields()["resuming"]
    assert isinstance(fields, PlainFields)
    scenario = load_lesson("when-a-rank-dies").scenario()
    assert fields.applies(scenario)
    fields.load(scenario)
    spec = scenario.table("resuming")
    boxes = fields.fields()
    assert {k: b.value() for k, b in boxes.items()} == {
        "resuming.resume_epoch": spec.resume_epoch,
        "resuming.interval": spec.interval,
        "resuming.kill_after": spec.kill_after,
        "resuming.max_restarts": spec.max_restarts,
    }
    boxes["resuming.interval"].setValue(4)
    raw: dict = {}
    fields.write(raw)
    assert RestartSpec.from_mapping(raw["resuming"]) == RestartSpec(
        **{**spec.to_dict(), "interval": 4}
    )
