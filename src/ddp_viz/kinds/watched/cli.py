"""The watched kind's command line: ``ddp-viz watch -- COMMAND`` and ``ddp-viz listen``
(pure: the command runs the user's script in processes of its own).

``ddp-viz`` adds these subcommands through :func:`add_parsers` and hands a parsed one to
:func:`run`, with what the core's command line can do for it (open the window, check for a
display) as a :class:`~ddp_viz.model.registry.CommandHost`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ddp_viz.kinds.watched.events import KIND
from ddp_viz.model.registry import CommandHost

COMMANDS = ("watch", "listen")


def add_parsers(sub: Any) -> None:
    """``watch`` and ``listen`` on ``ddp-viz``'s subcommands (``sub``: argparse's)."""
    watch = sub.add_parser(
        "watch",
        help="run your own DDP command (torchrun …) and watch its ranks, unchanged",
        description="Run COMMAND with every Python process in it watched: each "
        "DistributedDataParallel gets a capture comm hook around its own (or DDP's default), "
        "and the ranks stream their steps to a listener here. Exits with COMMAND's status.",
    )
    watch.add_argument("--record", metavar="FILE", help="save the watched run as JSON lines")
    watch.add_argument(
        "--listen",
        metavar="HOST:PORT",
        default="127.0.0.1:0",
        help="where the listener binds (default 127.0.0.1 on a free port)",
    )
    watch.add_argument(
        "--no-window", action="store_true", help="record and report only (no window)"
    )
    watch.add_argument(
        "--budget",
        metavar="FRACTION",
        type=float,
        help="share of training time full captures may take (default 0.02; 1: every step)",
    )
    watch.add_argument(
        "--hang-after",
        metavar="SECONDS",
        type=float,
        help="name a hang once no rank moved for this long (default: the larger of 10 s and "
        "20 median steps)",
    )
    watch.add_argument(
        "--remote",
        action="store_true",
        help="stream to the listener DDP_VIZ_ADDR names, with DDP_VIZ_TOKEN (ddp-viz listen)",
    )
    watch.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- COMMAND …")
    listen = sub.add_parser(
        "listen",
        help="listen for watched ranks on other machines (ddp-viz watch --remote)",
        description="Print an address and a token, then record what ranks started with "
        "`ddp-viz watch --remote` send, until Ctrl-C.",
    )
    listen.add_argument(
        "--bind",
        metavar="HOST:PORT",
        default="127.0.0.1:0",
        help="address to listen on (default 127.0.0.1; another machine needs its address)",
    )
    listen.add_argument("--record", metavar="FILE", help="save the watched run as JSON lines")
    listen.add_argument("--no-window", action="store_true", help="record and report only")


def run(args: argparse.Namespace, host: CommandHost) -> int:
    """``watch`` / ``listen``. ``watch`` with the window streams into it live; ``listen``
    with the window opens it on the recording once the listener stops."""
    from ddp_viz.kinds.watched.watch.command import listen, parse_address, watch, watch_remote

    given = getattr(args, "cmd", [])  # listen takes no command
    command = given[1:] if given[:1] == ["--"] else given
    if getattr(args, "hang_after", None) is not None:  # the ranks and the listener read it
        from ddp_viz.kinds.watched.doctor import HANG_ENV

        os.environ[HANG_ENV] = repr(args.hang_after)
    if args.command == "watch" and args.remote:
        return watch_remote(command)
    window = not args.no_window
    if window and args.command == "listen":
        try:  # a bad address first: before any word about the window
            parse_address(args.bind, "--bind")
        except ValueError as exc:
            print(f"ddp-viz listen: {exc}", file=sys.stdout)
            return 2
    if window and not host.has_display():
        print("ddp-viz: no display here: recording and reporting only", file=sys.stderr)
        window = False
    if args.command == "watch" and window and command:
        window_args = host.window_args([])
        # the window's own flags, given before `watch` (`ddp-viz --projector watch -- …`)
        window_args.size, window_args.projector = args.size, args.projector
        window_args.live = KIND  # the window streams the run in (qt.start_live)
        window_args.watch_cmd, window_args.record = command, args.record
        window_args.budget, window_args.listen = args.budget, args.listen
        return host.open_window(window_args)
    record = args.record
    if window and record is None:
        record = str(Path(tempfile.mkdtemp(prefix="ddp-viz-watch-")) / "watched.jsonl")
    if args.command == "listen":
        code = listen(args.bind, record)
    else:
        code = watch(command, record, args.listen, budget=args.budget)
    if not window or record is None or not Path(record).is_file():
        return code
    print(f"ddp-viz: opening {record} in the window", file=sys.stderr)
    host.open_window(host.window_args(["--open", record]))
    return code
