"""``ddp-viz check``'s work (pure): read lesson folders, put them in their course, and run every
rule (model.rules) on them. A folder that does not read is a problem like any other, never a
crash, so a lecturer sees every mistake of a lesson at once."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ddp_viz.model.course import lesson_folders
from ddp_viz.model.lesson import Lesson, LessonError, load_lesson_folder
from ddp_viz.model.rules import RULES, Problem, problems
from ddp_viz.model.rules.in_course import course_problems


@dataclass
class Checked:
    lessons: list[str] = field(default_factory=list)  # the ids checked, in course order
    problems: list[Problem] = field(default_factory=list)

    def text(self) -> str:
        lines = [p.text() for p in self.problems]
        n, rules = len(self.lessons), len(RULES)
        if self.problems:
            bad = len({p.lesson for p in self.problems})
            lines.append(f"✗ {len(self.problems)} problem(s) in {bad} of {n} lesson(s) checked")
        else:
            lines.append(f"✓ {n} lesson(s) meet all {rules} rules")
        return "\n".join(lines)


def lesson_dirs(path: Path) -> list[Path]:
    """``path`` if it is a lesson folder (it holds lesson.toml), else the lesson folders in it."""
    if (path / "lesson.toml").is_file():
        return [path]
    if not path.is_dir():
        raise LessonError(f"{path}: no such folder")
    found = sorted(p for p in path.iterdir() if (p / "lesson.toml").is_file())
    if not found:
        raise LessonError(f"{path}: no lesson.toml in it or in a folder of it")
    return found


def _read(folders: list[Path], out: Checked) -> list[Lesson]:
    lessons = []
    for folder in folders:
        try:
            lessons.append(load_lesson_folder(folder))
        except LessonError as err:
            message = str(err).partition(": ")[2]  # after "lesson <id>: "
            where = "lesson.toml"
            if message.startswith("question "):  # "question q3: unknown kind 'essay'"
                where, _, message = message.partition(": ")
            fix = "see the `loads` rule: ddp-viz check --rules"
            out.problems.append(Problem(folder.name, "loads", where, message, fix))
    return lessons


def check(paths: list[Path] | None = None) -> Checked:
    """Check the lesson folders ``paths`` (each a lesson or a folder of lessons) as lessons of
    the course (the app's and ``DDP_VIZ_LESSONS_PATH``'s); no paths: the whole course."""
    out = Checked()
    course_dirs = [d for f in lesson_folders() if f.is_dir() for d in lesson_dirs(f)]
    mine_dirs = [d for p in paths for d in lesson_dirs(p)] if paths else course_dirs
    mine = _read(mine_dirs, out)
    own = {lesson.id for lesson in mine}
    others = [] if not paths else _read([d for d in course_dirs if d.name not in own], Checked())
    course = sorted([*others, *mine], key=lambda lesson: (lesson.order, lesson.id))
    for lesson in course:
        if lesson.id in own:
            out.lessons.append(lesson.id)
            out.problems += problems(lesson, course)
    if not paths:
        out.problems += course_problems(course)
    out.lessons += [p.lesson for p in out.problems if p.rule == "loads"]
    return out
