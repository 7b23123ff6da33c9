"""Guards against Qt binding regressions that would crash a long-running window."""

from __future__ import annotations

import sys

from PySide6.QtCore import QObject, Signal


class _Emitter(QObject):
    fired = Signal(object)


def test_signals_do_not_leak_references_to_builtins(qapp) -> None:
    # PySide6 6.12.0 decrements True's refcount on every delivery to a Python slot; on
    # Python 3.11 that aborts the process ("bool_dealloc") after enough signals.
    e = _Emitter()
    got = []
    e.fired.connect(got.append)
    before = (sys.getrefcount(True), sys.getrefcount(None))
    for _ in range(200):
        e.fired.emit(None)
    got.clear()
    after = (sys.getrefcount(True), sys.getrefcount(None))
    assert abs(after[0] - before[0]) < 50 and abs(after[1] - before[1]) < 50
