"""What the command line and the window share: exit codes, sizes, and the scenario the flags
ask for (a lesson's default scenario, a file, and flag overrides on top)."""

from __future__ import annotations

import argparse

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--size: expected WIDTHxHEIGHT such as 1280x800, got {text!r}") from None
    if not (320 <= w <= 7680 and 240 <= h <= 4320):
        raise ValueError(f"--size: {w}x{h} is outside 320x240 … 7680x4320")
    return w, h


def add_scenario_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lesson", metavar="ID", help="a lesson's default scenario (ddp-viz lessons)")
    p.add_argument("--scenario", metavar="FILE", help="scenario TOML (default: the lesson's)")
    p.add_argument("--world-size", metavar="N", help="number of ranks, 1–8")
    p.add_argument("--steps", metavar="K", help="training steps, 1–100000")
    p.add_argument("--lr", metavar="LR", help="SGD learning rate (> 0)")


def load_scenario(args: argparse.Namespace):  # -> Scenario
    """The scenario the flags describe; ScenarioError (or LessonError) names the field."""
    from ddp_viz.model.course import first_lesson, load_course
    from ddp_viz.model.scenario import Scenario, ScenarioError

    if args.scenario:
        base = Scenario.load(args.scenario)
    else:
        course = load_course()
        lesson_id = args.lesson or first_lesson(course)
        if lesson_id not in course.ids:
            raise ScenarioError(
                "--lesson", f"no lesson {lesson_id!r}; choose one of {', '.join(course.ids)}"
            )
        base = course.get(lesson_id).scenario()
    return base.with_changes(world_size=args.world_size, steps=args.steps, lr=args.lr)


def window_scenario(args: argparse.Namespace, remembered_lesson: str):  # -> Scenario | None
    """The scenario the window opens with: what ``--scenario`` or ``--lesson`` name; with only
    ``--world-size``/``--steps``/``--lr``, the lesson the window will open (the remembered
    one) with those changes; with none of them, None: the window takes its lesson's own."""
    from ddp_viz.model.course import first_lesson, load_course

    if args.scenario or args.lesson:
        return load_scenario(args)
    if all(getattr(args, k, None) is None for k in ("world_size", "steps", "lr")):
        return None
    course = load_course()
    lesson = first_lesson(course, remembered_lesson)
    return (
        course.get(lesson)
        .scenario()
        .with_changes(world_size=args.world_size, steps=args.steps, lr=args.lr)
    )
