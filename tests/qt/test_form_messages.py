"""What the form says about bad input (issue 33, item 7): a letter typed into a spin box
vanished with no message, and the uneven timeout's error named its key; the field being
edited now says its error right under it."""

from __future__ import annotations

from PySide6.QtCore import Qt


def test_a_letter_in_a_spin_box_is_answered(qtbot, make_window) -> None:
    window = make_window()
    spin = window.form.world_size
    spin.setFocus()
    qtbot.keyClicks(spin, "a")
    said = window.form.rejected_keys.said
    assert "World size" in said and "“a”" in said and "number" in said
    before = spin.value()
    qtbot.keyClick(spin, Qt.Key.Key_End)
    assert spin.value() == before


def test_errors_name_the_field_as_the_form_labels_it() -> None:
    from ddp_viz._qt.form_labels import field_message

    text = field_message("uneven.timeout_s", "must be 1 to 30 seconds, got 40")
    assert text.startswith("Timeout (uneven.timeout_s): must be")
    assert field_message("lr", "must be > 0") == "Learning rate (lr): must be > 0"
