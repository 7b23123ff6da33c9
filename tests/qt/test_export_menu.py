"""File ▸ Export offers the Chrome trace only for a run with timings (issue 47, 10: it was
offered for comm-hooks and refused only after a file name had been chosen)."""

from __future__ import annotations

from tests.conftest import load_recording
from tests.qt_helpers import feed


def test_the_trace_export_is_offered_only_when_the_run_can_be_traced(qtbot, make_window):
    window = make_window(lesson_id="comm-hooks")
    with qtbot.waitSignal(window.run_shown, timeout=30_000):
        feed(window, load_recording("comm-hooks-14-steps.jsonl"))
    window.update_exports()  # as the Export menu does when it opens
    trace = window.export_actions["export_trace"]
    assert not trace.isEnabled() and "no timings" in trace.text()
    window.set_lesson("buckets")
    with qtbot.waitSignal(window.run_ended, timeout=30_000):
        feed(window, load_recording("buckets-lesson-2-ranks.jsonl"))
    window.update_exports()
    assert trace.isEnabled() and trace.text() == "Chrome trace (Perfetto)…"
