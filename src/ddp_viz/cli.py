"""Command line: ``ddp-viz`` (the window), ``ddp-viz run`` (headless), ``ddp-viz bench``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ddp_viz import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _add_scenario_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario", metavar="FILE", help="scenario TOML (default: the lesson's)")
    p.add_argument("--world-size", metavar="N", help="number of ranks, 1–8")
    p.add_argument("--steps", metavar="K", help="training steps, 1–100000")
    p.add_argument("--lr", metavar="LR", help="SGD learning rate (> 0)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ddp-viz",
        description="Learn PyTorch DistributedDataParallel by watching a real gloo run. "
        "With no command, opens the window.",
    )
    parser.add_argument("--version", action="version", version=f"ddp-viz {__version__}")
    _add_scenario_args(parser)
    parser.add_argument("--run", action="store_true", help="start a run when the window opens")
    parser.add_argument("--screenshot", metavar="FILE", help="save a PNG of the window")
    parser.add_argument("--quit", action="store_true", help="exit after --run / --screenshot")
    parser.add_argument("--size", metavar="WxH", help="window size, e.g. 1280x800")
    parser.add_argument("--projector", action="store_true", help="large type for a projector")
    parser.add_argument("--probe-first-paint", action="store_true", help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command")

    run = sub.add_parser("run", help="run a scenario headless and print what happened")
    _add_scenario_args(run)
    run.add_argument("--json", action="store_true", help="print the raw event stream")

    bench = sub.add_parser("bench", help="measure start-up, warm runs, memory against baselines")
    bench.add_argument("--quick", action="store_true", help="fewer repetitions")
    bench.add_argument("--only", metavar="NAMES", help="comma-separated subset of benchmarks")
    return parser


def load_scenario(args: argparse.Namespace):  # -> Scenario
    from ddp_viz.scenario import Scenario, default_scenario

    base = Scenario.load(args.scenario) if args.scenario else default_scenario()
    return base.with_changes(world_size=args.world_size, steps=args.steps, lr=args.lr)


def cmd_run(args: argparse.Namespace) -> int:
    import json

    from ddp_viz import protocol
    from ddp_viz.client import EngineClient
    from ddp_viz.report import run_report
    from ddp_viz.scenario import ScenarioError
    from ddp_viz.timeline import RunRecord

    try:
        scenario = load_scenario(args)
    except ScenarioError as exc:
        print(f"ddp-viz: invalid scenario: {exc}", file=sys.stderr)
        return EXIT_USAGE
    import signal

    def _on_sigterm(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through `finally`, which stops the engine

    signal.signal(signal.SIGTERM, _on_sigterm)
    rec = RunRecord()
    client = EngineClient(stderr=sys.stderr)
    try:
        for event in client.run(scenario):
            rec.apply(event)
            if args.json:
                print(json.dumps(protocol.to_dict(event)), flush=True)
    except KeyboardInterrupt:
        print("ddp-viz: interrupted; stopping the ranks", file=sys.stderr)
        return 130
    except Exception as exc:
        print(f"ddp-viz: run failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        client.close()
    if not args.json:
        print(run_report(rec))
    if rec.status != "finished":
        print(f"ddp-viz: run {rec.status}: {rec.reason}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "run":
        return cmd_run(args)
    if args.command == "bench":
        from ddp_viz.bench import main as bench_main

        return bench_main(quick=args.quick, only=args.only)
    from ddp_viz.app import main as app_main

    return app_main(args)


if __name__ == "__main__":
    sys.exit(main())
