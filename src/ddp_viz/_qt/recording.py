"""Opening a recorded run in the window: a file of ours (``ddp-viz run --events``, File ▸
Export ▸ events) or a watched run (``ddp-viz watch --record``). The run is shown on the stage
of the lesson its header names; a watched run gets its own page (``assets/watched``). A file
from before headers (schema 0) names no lesson: the scenario's says which."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from ddp_viz._qt.lesson_switch import show_lesson
from ddp_viz.model import protocol, registry
from ddp_viz.model.assets import asset
from ddp_viz.model.course import lesson_for
from ddp_viz.model.errors import ScenarioError
from ddp_viz.model.lesson import Lesson, load_lesson_folder
from ddp_viz.model.recordings import Recording, read_lines
from ddp_viz.model.scenario import Scenario

if TYPE_CHECKING:  # the window imports this module
    from ddp_viz._qt.main_window import MainWindow


class RecordingError(ValueError):
    """A file that is not a recorded run."""


def read_recording(path: str | Path) -> Recording:
    """The recording in ``path``, upgraded to this schema (or what can be shown of a newer
    one), with how many lines were not valid events (skipped)."""
    try:
        with open(path, "rb") as f:
            recording = read_lines(f)
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not any(isinstance(e, protocol.RunStarted) for e in recording.events):
        raise RecordingError(f"{Path(path).name} holds no run (no run_started event)")
    return recording


def lesson_of(window: MainWindow, recording: Recording) -> Lesson:
    """The lesson the header names; for schema 0 (no header), the one the scenario is about.
    A kind with a page of its own outside the course opens on that page."""
    start = next(e for e in recording.events if isinstance(e, protocol.RunStarted))
    lesson = recording.lesson or lesson_for(start.scenario)  # no header: schema 0
    if registry.page_of(lesson) is None and lesson not in window.course.ids:
        lesson = lesson_for(start.scenario)
    page = registry.page_of(lesson)
    if page is not None:
        return load_lesson_folder(asset(page))
    return window.course.get(lesson)


def open_recording(window: MainWindow, path: str | Path) -> str:
    """Show the run recorded in ``path``; the status line it leaves (RecordingError if the
    file is not a recording, before anything on screen changes)."""
    recording = read_recording(path)
    events, bad = recording.events, recording.bad
    lesson = lesson_of(window, recording)
    if window.session.busy:
        raise RecordingError("finish or cancel the run before opening another")
    show_lesson(window, lesson)
    window.session.replay(events, recording.version_line(), note_first=recording.newer)
    rec = window.session.record
    # Try it yourself holds the recorded run's settings, so Run runs it again; a watched
    # run's (or another version's) are not a scenario of ours: the lesson's own stay
    with contextlib.suppress(ScenarioError):
        window.form.set_scenario(Scenario.from_mapping(rec.scenario))
    done = len(rec.complete_steps())
    skipped = f"; {bad} line(s) that are not events were skipped" if bad else ""
    text = f"Opened {Path(path).name}: {rec.world_size} rank(s), {done} complete step(s){skipped}."
    if version := recording.version_line():
        text += " " + version
    if recording.newer:  # what was left out matters more than the counts: it goes first
        text = f"{version} Opened {Path(path).name}: {rec.world_size} rank(s), {done} step(s)."
    window.status.setText(text)
    return text
