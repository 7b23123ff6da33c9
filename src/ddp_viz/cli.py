"""Command line: ``ddp-viz`` (the window), ``ddp-viz run`` (headless), ``ddp-viz lessons``,
``ddp-viz schema``, ``ddp-viz bench``."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from ddp_viz import __version__
from ddp_viz.model import registry
from ddp_viz.options import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    add_scenario_args,
    load_scenario,
    parse_size,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ddp-viz",
        description="Learn PyTorch DistributedDataParallel by watching a real gloo run. "
        "With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"ddp-viz {__version__}")
    add_scenario_args(parser)
    parser.add_argument("--run", action="store_true", help="start a run when the window opens")
    parser.add_argument(
        "--open",
        metavar="FILE.jsonl",
        help=f"open a recorded run ({', '.join(['ddp-viz run --events', *_recorders()])}); "
        "`ddp-viz FILE.jsonl` does the same",
    )
    parser.add_argument("--screenshot", metavar="FILE", help="save a PNG of the window")
    parser.add_argument("--quit", action="store_true", help="exit after --run / --screenshot")
    parser.add_argument("--size", metavar="WxH", help="window size, e.g. 1280x800")
    parser.add_argument("--projector", action="store_true", help="large type for a projector")
    parser.add_argument("--probe-first-paint", action="store_true", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command")

    parser.add_argument(
        "--lessons",
        metavar="DIR",
        action="append",
        default=[],
        help="a folder of lessons of your own (each a folder with lesson.toml), shown in the "
        "course beside the app's; may be given more than once",
    )
    parser.add_argument(
        "--lessons-only",
        action="store_true",
        help="a course of the --lessons folders' lessons alone, without the app's",
    )
    sub.add_parser("lessons", help="list the course's lessons (id, title, summary)")
    check = sub.add_parser(
        "check",
        help="check lesson folders against every rule a lesson must meet",
        description="Check lessons against every rule the course's own lessons meet (texts, "
        "phases, quiz, scenario, listing, terms, order): each problem names the lesson, where "
        "in it, the rule and the fix. With no folder, checks the whole course.",
    )
    check.add_argument(
        "folders",
        nargs="*",
        metavar="LESSON_DIR",
        help="a lesson folder, or a folder of lesson folders (default: the whole course)",
    )
    check.add_argument("--rules", action="store_true", help="print the rules, as Markdown")
    check.add_argument(
        "--kinds", action="store_true", help="print the kinds' scenes and quantities, as Markdown"
    )
    schema = sub.add_parser(
        "schema",
        help="print the event format as JSON Schema (draft 2020-12)",
        description="Print the JSON Schema of one line of a recording: the header and every "
        "event kind, generated from the event classes.",
    )
    schema.add_argument(
        "--markdown",
        action="store_true",
        help="print the docs' page of the core's events (docs/events.md), or of --kind's",
    )
    schema.add_argument(
        "--kind", metavar="ID", help="one kind's own events only (its folder's name under kinds/)"
    )
    run = sub.add_parser("run", help="run a scenario headless and print what happened")
    add_scenario_args(run)
    run.add_argument("--json", action="store_true", help="print the raw event stream")
    out = run.add_argument_group("exports (for slides and traces)")
    out.add_argument("--events", metavar="FILE", help="save the events as JSON lines")
    out.add_argument("--trace", metavar="FILE", help="save a Chrome trace (Perfetto) of the run")
    out.add_argument("--gif", metavar="FILE", help="save the stage as an animated GIF")
    out.add_argument("--stage-png", metavar="FILE", help="save the stage's last phase as PNG")
    out.add_argument("--fps", metavar="N", help="GIF frame rate (default: one frame per phase)")
    out.add_argument(
        "--theme",
        choices=("light", "dark", "projector"),
        default="light",
        help="look of the GIF and PNG (default light)",
    )
    out.add_argument(
        "--size",
        metavar="WxH",
        default="1280x720",
        help="size of the GIF and PNG (default 1280x720)",
    )

    for part in registry.load_parts("cli").values():  # a kind's own subcommands
        part.add_parsers(sub)

    bench = sub.add_parser("bench", help="measure start-up, warm runs, memory against baselines")
    bench.add_argument("--quick", action="store_true", help="fewer repetitions")
    bench.add_argument("--only", metavar="NAMES", help="comma-separated subset of benchmarks")
    bench.add_argument(
        "--smoke",
        action="store_true",
        help="; ".join(
            ["stream: 20 steps × 3 ranks (checks it runs and counts what was sent)"]
            + [p.SMOKE_HELP for p in registry.load_parts("bench").values()]
        ),
    )
    return parser


def cmd_lessons() -> int:
    from ddp_viz.model.course import load_course

    course = load_course()
    width = max(len(lesson.id) for lesson in course)
    for i, lesson in enumerate(course, start=1):
        print(f"{i:>2}. {lesson.id:<{width}}  {lesson.title}")
        print(f"    {'':<{width}}  {lesson.summary}")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ddp_viz.model.lesson import LessonError
    from ddp_viz.model.rules import rules_markdown
    from ddp_viz.model.rules.check import check

    if args.rules or args.kinds:
        from ddp_viz.model.kinds_doc import kinds_markdown

        sys.stdout.write(rules_markdown() if args.rules else kinds_markdown())
        return EXIT_OK
    try:
        checked = check([Path(f) for f in args.folders])
    except LessonError as err:
        print(f"ddp-viz check: {err}", file=sys.stderr)
        return EXIT_USAGE
    print(checked.text())
    return EXIT_OK if not checked.problems else EXIT_FAILED


def cmd_schema(args: argparse.Namespace) -> int:
    from ddp_viz.model import schema

    kind, known = args.kind, schema.registry.event_versions()
    if kind is not None and kind not in known:
        sys.stderr.write(
            f"ddp-viz schema: --kind: no kind {kind!r} has events ({', '.join(known)})\n"
        )
        return EXIT_USAGE
    if args.markdown:
        from ddp_viz.model.schema_doc import markdown

        sys.stdout.write(markdown(schema.CORE if kind is None else kind))
    else:
        sys.stdout.write(schema.schema_json(kind))
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:

    from ddp_viz.client import EngineClient, per_step_kinds
    from ddp_viz.model import protocol
    from ddp_viz.model.course import lesson_for
    from ddp_viz.model.decoder import Skimmed
    from ddp_viz.model.lesson import LessonError
    from ddp_viz.model.recording_format import header
    from ddp_viz.model.report import run_report
    from ddp_viz.model.scenario import ScenarioError
    from ddp_viz.model.timeline import RunRecord, RunStatus

    try:
        scenario = load_scenario(args)
    except (ScenarioError, LessonError) as exc:
        print(f"ddp-viz: invalid scenario: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        export_opts = check_exports(args)
    except ValueError as exc:
        print(f"ddp-viz: {exc}", file=sys.stderr)
        return EXIT_USAGE
    import signal

    def _on_sigterm(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through `finally`, which stops the engine

    signal.signal(signal.SIGTERM, _on_sigterm)
    # the lesson the run belongs to, named in its recording's header
    lesson = args.lesson or lesson_for(scenario.to_dict())
    rec = RunRecord()
    # --json alone only passes each step's lines on, as the ranks wrote them with
    # protocol.encode: they are not decoded (nor validated) here; the run's own events are,
    # for its outcome. The report and the exports need every event decoded.
    skim = per_step_kinds() if args.json and not export_opts else frozenset()
    client = EngineClient(stderr=sys.stderr, skim=skim)
    try:
        out = sys.stdout.buffer
        if args.json:  # a recording like any other: the header line first
            out.write(protocol.encode(header(lesson)).encode() + b"\n")
        for event, line in client.run_with_lines(scenario):
            if not isinstance(event, Skimmed):
                rec.apply(event)
            if args.json:
                out.write(line + b"\n")  # passed on as the engine wrote it
                if not client.pending:  # flush per burst, not per line: a reader still sees
                    out.flush()  # every event as soon as the engine wrote it
    except KeyboardInterrupt:
        print("ddp-viz: interrupted; stopping the ranks", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `ddp-viz run --json | head -1`: main() ends it quietly
        raise
    except Exception as exc:
        print(f"ddp-viz: run failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        client.close()
    if not args.json:
        print(run_report(rec))
    if export_opts:
        write_exports(rec, args, lesson, **export_opts)
    if rec.status is not RunStatus.FINISHED:
        print(f"ddp-viz: run {rec.status}: {rec.reason}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def check_exports(args: argparse.Namespace) -> dict:
    """Validate export flags before any process starts; ValueError names the flag."""

    wanted = {k: getattr(args, k) for k in ("events", "trace", "gif", "stage_png")}
    for key, path in wanted.items():
        if path and not Path(path).resolve().parent.is_dir():
            flag = "--" + key.replace("_", "-")
            raise ValueError(f"{flag}: folder {Path(path).parent} does not exist")
    if not any(wanted.values()):
        return {}
    fps = None
    if args.fps is not None:
        try:
            fps = float(args.fps)
        except ValueError:
            raise ValueError(f"--fps: must be a number, got {args.fps!r}") from None
        if not 1 <= fps <= 50:
            raise ValueError(f"--fps: must be between 1 and 50, got {fps:g}")
    return {"fps": fps, "size": parse_size(args.size)}


def write_exports(  # type: ignore[no-untyped-def]
    rec, args: argparse.Namespace, lesson_id: str, fps: float | None, size: tuple[int, int]
) -> None:

    from ddp_viz.model.exports import chrome_trace_json, events_jsonl

    if args.events:
        Path(args.events).write_text(events_jsonl(rec, lesson_id), encoding="utf-8")
        print(f"ddp-viz: saved events to {args.events}", file=sys.stderr)
    if args.trace:
        Path(args.trace).write_text(chrome_trace_json(rec), encoding="utf-8")
        print(
            f"ddp-viz: saved a Chrome trace to {args.trace} (open it in Perfetto)", file=sys.stderr
        )
    if args.gif or args.stage_png:
        import os

        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # never pops up a window
        from PySide6.QtWidgets import QApplication

        from ddp_viz._qt import export
        from ddp_viz._qt.stage import StageWidget
        from ddp_viz._qt.theme import apply_theme
        from ddp_viz.model.course import load_course
        from ddp_viz.model.theme import load_theme
        from ddp_viz.model.timeline import PHASES, Cursor

        app = QApplication.instance() or QApplication(sys.argv[:1])
        theme = load_theme(args.theme)
        apply_theme(app, theme)
        lesson = load_course().get(lesson_id)  # a lesson of --lessons too
        if args.gif:
            frames = export.stage_frames(rec, theme, lesson, size=size, fps=fps)
            export.save_gif(frames, args.gif, fps, keep=export.theme_colours(theme))
            print(f"ddp-viz: saved {len(frames)} frames to {args.gif}", file=sys.stderr)
        if args.stage_png:
            stage = StageWidget(theme, lesson)
            stage.resize(*size)
            stage.set_record(rec)
            last = max(0, rec.complete_prefix() - 1)
            stage.set_position(Cursor(last, len(PHASES) - 1), 1.0)
            export.save_png(stage, args.stage_png)
            print(f"ddp-viz: saved {args.stage_png}", file=sys.stderr)


def _recorders() -> list[str]:
    """The kinds' own commands that record a run (``--open`` opens their files too)."""
    return [command for kind in registry.kinds() for command in kind.records]


def kind_commands() -> dict[str, ModuleType]:
    """Each kind's command-line part (its folder's ``cli.py``), by the subcommands it adds."""
    return {name: part for part in registry.load_parts("cli").values() for name in part.COMMANDS}


def cmd_of_kind(args: argparse.Namespace, part: ModuleType) -> int:
    """A kind's subcommand, with what this command line can do for it."""
    from ddp_viz.app import has_display
    from ddp_viz.app import main as app_main

    host = registry.CommandHost(
        window_args=build_parser().parse_args, open_window=app_main, has_display=has_display
    )
    return int(part.run(args, host))


def opening(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """`ddp-viz [options] run.jsonl`: a recording where the command would be is opened, before
    or after the window's options (argparse alone takes it for an unknown command)."""
    takes_value = {
        flag
        for a in parser._actions
        if a.option_strings and a.nargs != 0
        for flag in a.option_strings
    }
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in takes_value:  # its value is the next word, whatever it looks like
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return [*argv[:i], "--open", *argv[i:]] if word.endswith(".jsonl") else argv
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = opening(list(sys.argv[1:] if argv is None else argv), parser)
    args = parser.parse_args(argv)
    if args.lessons:  # the course reads them from here, in this process and in the engine's
        known = os.environ.get("DDP_VIZ_LESSONS_PATH", "")
        os.environ["DDP_VIZ_LESSONS_PATH"] = os.pathsep.join([*args.lessons, known]).strip(
            os.pathsep
        )
    if args.lessons_only:
        if not os.environ.get("DDP_VIZ_LESSONS_PATH"):
            print("ddp-viz: --lessons-only needs --lessons DIR", file=sys.stderr)
            return EXIT_USAGE
        os.environ["DDP_VIZ_LESSONS_ONLY"] = "1"
    if args.command == "check":
        return cmd_check(args)
    if args.command in ("run", "lessons", "schema"):
        try:
            if args.command == "schema":
                return cmd_schema(args)
            return cmd_run(args) if args.command == "run" else cmd_lessons()
        except BrokenPipeError:  # `ddp-viz run | head`: the reader left; nothing is wrong
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115  (flushing at exit is quiet)
            return 0
    part = kind_commands().get(args.command or "")
    if part is not None:
        return cmd_of_kind(args, part)
    if args.command == "bench":
        from ddp_viz.bench import main as bench_main

        return bench_main(quick=args.quick, only=args.only, smoke=args.smoke)
    from ddp_viz.app import main as app_main

    return app_main(args)


if __name__ == "__main__":
    sys.exit(main())
