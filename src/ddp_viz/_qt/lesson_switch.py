"""Putting a lesson on every view: the course's lessons, and the page a kind of run may open
on outside the course (``RunKind.page``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddp_viz._qt.window_layout import apply_split_proportions
from ddp_viz.model import registry
from ddp_viz.model.frame import Link
from ddp_viz.model.lesson import Lesson
from ddp_viz.model.scenes import whole_steps

if TYPE_CHECKING:  # the window imports this module
    from ddp_viz._qt.main_window import MainWindow


def show_lesson(window: MainWindow, lesson: Lesson) -> None:
    if window.session.busy:
        window.status.setText("Finish or cancel the run before changing lessons.")
        return
    edited = window.form.scenario()  # what the learner set for the lesson being left
    if edited is not None and window.lesson.id in window.course.ids:
        window.tried[window.lesson.id] = edited
    window.lesson = lesson
    for view in (window.lesson_view, window.code_view, window.stage):
        view.set_lesson(lesson)
    index = window.tabs.indexOf(window.quiz_view)
    window.quiz_view = window.quiz_for(lesson)
    window.quiz_view.set_theme(window.theme)
    window.tabs.removeTab(index)
    window.tabs.insertTab(index, window.quiz_view, "Quiz")
    window.session.set_questions(list(lesson.questions))
    # the stage and plots showed the previous lesson's run: start clean
    window.player.pause()
    window.player.whole_steps = whole_steps(lesson.scene)  # a watched step: one press of Right
    window.session.forget_run()  # File ▸ Export exported it over an empty stage
    window.player.set_record(None)  # the toolbar's step and slider too
    window.stage.set_record(None)
    window.stage.set_message("Press Run to start real DDP ranks for this lesson.")
    window.process_view.set_record(None)  # the last run's ranks and rows
    kind = lesson.run_kind()
    # a run of a model not ddp-viz's has no loss surface to draw
    window.plots_panel.surface = kind is None or not kind.foreign_model
    if window.plots_panel.built:
        window.plots.clear_run(window.plots_panel.surface)
    window.plots_panel.setVisible(lesson.plots)  # nothing to plot for a collective run
    defaults = lesson.scenario()  # read from the lesson's folder: once
    window.form.set_lesson_scenario(defaults)
    kept = window.tried.get(lesson.id)
    back = kept is not None and kept != defaults
    if back:  # a visit back finds the learner's own settings ("Lesson values" resets them)
        window.form.set_scenario(kept)
    for kind_id, part in registry.load_parts("qt").items():  # a kind's page's own views
        if hasattr(part, "show_page"):
            part.show_page(window, kind is not None and kind.id == kind_id)
    window.tabs.setCurrentWidget(window.lesson_view)
    in_course = lesson.id in window.course.ids
    # a watched run's page has nothing to try: the run is the user's own script
    window.form_scroll.setVisible(in_course)
    window.process_view.set_engine_needed(in_course)  # not "engine: starting" on it
    window._update_actions()
    apply_split_proportions(window)  # this lesson's form may be longer or shorter
    if in_course:
        window.lesson_needs_engine()  # a watching window's engine starts now
        window.course_view.set_current(lesson.id)
        if window.settings is not None:
            window.settings.setValue("course/current", lesson.id)
        where = window.course.index(lesson.id) + 1
        mine = " · your settings for it are back (Lesson values resets them)" if back else ""
        window.status.setText(f"Lesson {where}: {lesson.title}{mine}")
    else:
        window.status.setText(lesson.title)


def follow_link(window: MainWindow, link: Link) -> None:
    """A link on the stage was clicked (or Entered): a course lesson it names opens; any
    other goes to the Qt part of the page's kind (``follow_link(window, key)``), which knows
    what its keys mean (a watched run's diagnosis: its step and stack)."""
    if link.lesson:
        if link.lesson in window.course.ids:
            window.set_lesson(link.lesson)
        return
    kind = window.lesson.run_kind()
    part = registry.load_parts("qt").get(kind.id) if kind is not None else None
    if part is not None and hasattr(part, "follow_link"):
        part.follow_link(window, link.key)
