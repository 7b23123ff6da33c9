"""``ddp-viz watch [--record FILE] [--listen HOST:PORT] -- COMMAND …``: run the command with
every Python process in it watched, record what its ranks send, and exit with its status.

No torch and no Qt here: the command (typically ``torchrun``) is the distributed engine; this
process only listens, records and reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import ddp_viz
from ddp_viz import platform
from ddp_viz.kinds.watched import attempts, wire
from ddp_viz.kinds.watched.agree import averages_identical, non_finite_average
from ddp_viz.kinds.watched.attempts import findings, verdict
from ddp_viz.kinds.watched.events import (
    KIND,
    WatchAround,
    WatchDigests,
    WatchFailure,
    WatchHang,
    WatchNeverSynced,
    WatchNonFinite,
    WatchRankLost,
    WatchSummary,
)
from ddp_viz.kinds.watched.history import HISTORY, History, complete_count, recorded
from ddp_viz.kinds.watched.straggler import straggler_text
from ddp_viz.kinds.watched.watch import launcher
from ddp_viz.kinds.watched.watch.listener import RUN, Listener, Sink
from ddp_viz.kinds.watched.watch.relay import Relay
from ddp_viz.model import protocol
from ddp_viz.model.recording_format import header
from ddp_viz.model.timeline import RunRecord

BOOT = Path(__file__).parent / "boot"
DRAIN_S = 5.0  # after the command ends: how long the last connections may take to close
STOP_S = 10.0  # after Ctrl-C is passed on: how long the command may take to stop
# said the moment they are found; a crash, an uneven end and the verdict wait for the end
# of the command (its ranks' later errors and exit statuses change what the cause is)
LIVE = ("hang", "non_finite", "desync", "around", "never_synced")
STOPPED = {"by_user": False}  # this process's watched command was stopped by Ctrl-C or a close
DOCTOR_KINDS = {
    k.kind
    for k in (WatchHang, WatchRankLost, WatchNonFinite, WatchDigests, WatchAround, WatchNeverSynced)
}


def parse_address(text: str, flag: str = "--listen") -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"{flag}: expected HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def watched_env(addr: str, token: str, budget: float | None = None) -> dict[str, str]:
    """The command's environment: our sitecustomize first on PYTHONPATH, where to find this
    package (appended to the path, after the script's own), the listener and the token, and
    the share of training time full captures may take (``--budget``)."""
    env = dict(os.environ)
    if budget is not None:
        env[wire.BUDGET_ENV] = repr(budget)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(BOOT) + (os.pathsep + path if path else "")
    env["DDP_VIZ_HOME"] = str(Path(ddp_viz.__file__).resolve().parent.parent)
    env[wire.ADDR_ENV], env[wire.TOKEN_ENV] = addr, token
    return env


class Recorder:
    """Folds the listener's events into a run (for the report) and writes them, if asked."""

    def __init__(
        self, record: str | None, forward: Sink | None = None, out: TextIO | None = None
    ) -> None:
        self.forward = forward  # a live window's transport: every event, as it is recorded
        self.out = out  # where the doctor's findings are said as they come
        self.said: set[str] = set()
        self.rec = RunRecord()
        self.path = record
        self.file = open(record, "w", encoding="utf-8") if record else None  # noqa: SIM115
        if self.file is not None:
            self.file.write(protocol.encode(header(KIND)) + "\n")
        self.t0 = time.monotonic()

    def __call__(self, event: protocol.Event) -> None:
        # the user's stop reaches every rank as a Ctrl-C: no rank's failure, not even for the
        # moment until the command's summary says it was stopped
        interrupted = isinstance(event, WatchFailure) and event.type == "KeyboardInterrupt"
        if interrupted and STOPPED["by_user"]:
            return
        self.rec.apply(event)
        if self.forward is not None:
            self.forward(event)
        if self.file is not None and recorded(event):  # a long run's file thinned as it grows
            self.file.write(protocol.encode(event) + "\n")
            self.file.flush()
        if self.out is not None and event.kind in DOCTOR_KINDS:
            self.say()

    def say(self) -> None:
        """The doctor's findings not said yet, now (a hang within a moment of its naming)."""
        for key, lines in findings(self.rec):
            if key not in self.said and key.startswith(LIVE):
                self.said.add(key)
                print("ddp-viz watch: " + "\n".join(lines), file=self.out, flush=True)

    def finish(self, listener: Listener, code: int) -> None:
        done = complete_count(self.rec)  # the steps it thinned too
        refused, bad, dropped = dict(listener.refused), listener.bad_lines, listener.dropped
        self(WatchSummary(RUN, code, refused, bad, dropped, STOPPED["by_user"]))
        if self.rec.run is not None:
            self(protocol.RunFinished(RUN, done, time.monotonic() - self.t0))
        if self.file is not None:
            self.file.close()


def watch(
    command: list[str],
    record: str | None,
    listen: str,
    out: TextIO | None = None,
    budget: float | None = None,
) -> int:
    """Listen here, run ``command`` watched, record; the command's exit status."""
    out = out or sys.stderr  # read now: a test (or a caller) may have replaced it
    if not command:
        print("ddp-viz watch: give the command after --, e.g. -- torchrun …", file=out)
        return 2
    try:
        host, port = parse_address(listen)
    except ValueError as exc:
        print(f"ddp-viz watch: {exc}", file=out)
        return 2
    if budget is not None and not 0 < budget <= 1:
        print(f"ddp-viz watch: --budget: a fraction in (0, 1], got {budget:g}", file=out)
        return 2
    return asyncio.run(_watch(command, record, host, port, out, budget))


def watch_remote(command: list[str], out: TextIO | None = None) -> int:
    """Run ``command`` watched, streaming to the listener ``DDP_VIZ_ADDR`` names (``ddp-viz
    listen`` on another machine), proving ``DDP_VIZ_TOKEN``."""
    out = out or sys.stderr
    addr, token = os.environ.get(wire.ADDR_ENV, ""), os.environ.get(wire.TOKEN_ENV, "")
    if not command or not addr or not token:
        print(
            f"ddp-viz watch --remote: set {wire.ADDR_ENV}=HOST:PORT and {wire.TOKEN_ENV} (as "
            "`ddp-viz listen` prints them) and give the command after --",
            file=out,
        )
        return 2
    try:
        parse_address(addr, wire.ADDR_ENV)
    except ValueError as exc:
        print(f"ddp-viz watch --remote: {exc}", file=out)
        return 2
    return asyncio.run(_run_command(command, watched_env(addr, token), out))


def listen(bind: str, record: str | None, out: TextIO | None = None) -> int:
    """Listen until Ctrl-C (or SIGTERM) for ranks that ``watch --remote`` starts elsewhere."""
    out = out or sys.stdout
    try:
        host, port = parse_address(bind, "--bind")
    except ValueError as exc:
        print(f"ddp-viz listen: {exc}", file=out)
        return 2
    return asyncio.run(_listen(host, port, record, out))


async def _listen(host: str, port: int, record: str | None, out: TextIO) -> int:
    recorder = Recorder(record)
    opened = await _open_listener(recorder, host, port, out, "listen")
    if opened is None:
        return 2
    listener, bound, port = opened
    print(
        f"ddp-viz listen: on {bound}:{port}\n"
        f"  on each training machine: {wire.ADDR_ENV}={bound}:{port} "
        f"{wire.TOKEN_ENV}={listener.token} ddp-viz watch --remote -- torchrun …",
        file=out,
        flush=True,
    )
    stop = asyncio.Event()
    # where the loop takes no signal handler (Windows), Ctrl-C raises KeyboardInterrupt instead
    platform.on_stop_signals(asyncio.get_running_loop(), lambda _sig: stop.set())
    await stop.wait()
    await listener.close()
    recorder.finish(listener, 0)
    print(summary(recorder.rec, listener, None, record), file=out, flush=True)
    return 0


def watch_live(
    command: list[str],
    record: str | None,
    listen: str,
    budget: float | None,
    forward: Sink,
    started: Callable[[int], None],
    out: TextIO | None = None,
    relay: Relay | None = None,
) -> int:
    """:func:`watch` for a window: every event also goes to ``forward`` as it arrives, and
    ``started`` gets the command's process id (its process group: what stopping stops). The
    command's output goes through ``relay``: once it is muted (the window closed), one line
    says so instead of what the stopping command prints. Runs in any thread."""
    out = out or sys.stderr
    host, port = parse_address(listen)
    return asyncio.run(_watch(command, record, host, port, out, budget, forward, started, relay))


async def _watch(
    command: list[str],
    record: str | None,
    host: str,
    port: int,
    out: TextIO,
    budget: float | None,
    forward: Sink | None = None,
    started: Callable[[int], None] | None = None,
    relay: Relay | None = None,
) -> int:
    recorder = Recorder(record, forward, out)
    opened = await _open_listener(recorder, host, port, out, "watch")
    if opened is None:
        return 2
    listener, bound, port = opened
    print(f"ddp-viz watch: listening on {bound}:{port}", file=out)
    env = watched_env(f"{bound}:{port}", listener.token, budget)
    STOPPED["by_user"] = False
    exits = Path(tempfile.mkdtemp(prefix="ddp-viz-exits-")) / "exits.jsonl"
    env[launcher.EXITS_ENV] = str(exits)
    code = await _run_command(command, env, out, started, relay)
    with contextlib.suppress(TimeoutError):  # the last connections may take a moment to close
        await asyncio.wait_for(listener.idle.wait(), DRAIN_S)
    await listener.close()
    for e in launcher.read_exits(exits, {r.pid: r.rank for r in listener.ranks.values()}):
        recorder(e)
    shutil.rmtree(exits.parent, ignore_errors=True)
    recorder.finish(listener, code)
    if relay is not None and relay.muted:  # the window closed: what the stop printed is gone
        print(closed_line(recorder.rec, record), file=out, flush=True)
    # the report, the verdict last, after the command's own output (and after a Ctrl-C too)
    print(summary(recorder.rec, listener, code, record), file=out, flush=True)
    return code


def closed_line(rec: RunRecord, record: str | None) -> str:
    """The one line a window closed during its watched run leaves in the terminal."""
    saved = f"; recorded to {record}" if record else ""
    return (
        f"ddp-viz watch: stopped (the window was closed, or Ctrl-C): the command and its "
        f"{len(rec.pids)} rank(s) after {complete_count(rec)} step(s){saved}"
    )


async def _open_listener(
    recorder: Recorder, host: str, port: int, out: TextIO, who: str
) -> tuple[Listener, str, int] | None:
    """A listener with a fresh token, bound; None (and why, on ``out``) if it cannot bind."""
    listener = Listener(wire.new_token(), recorder, host, port)
    try:
        bound, port = await listener.start()
    except OSError as exc:
        print(f"ddp-viz {who}: cannot listen on {host}:{port}: {exc}", file=out)
        return None
    return listener, bound, port


async def _run_command(
    command: list[str],
    env: dict[str, str],
    out: TextIO,
    started: Callable[[int], None] | None = None,
    relay: Relay | None = None,
) -> int:
    streams = relay.open() if relay is not None else {}
    try:
        proc = await asyncio.create_subprocess_exec(
            *command, env=env, **platform.new_group(), **streams
        )
    except OSError as exc:
        print(f"ddp-viz watch: cannot start {command[0]}: {exc}", file=out)
        return 127
    finally:
        if relay is not None:
            relay.started()
    if started is not None:
        started(proc.pid)
    # Ctrl-C stops the whole tree, then us
    platform.on_stop_signals(asyncio.get_running_loop(), functools.partial(_pass_on, proc.pid))
    code = await proc.wait()
    if relay is not None:
        await asyncio.to_thread(relay.join)  # its last lines, before ours
    return 128 - code if code < 0 else code  # killed by a signal: the shell's convention


def stop_command(pid: int) -> None:
    """Stop a watched command and everything it started (Ctrl-C to its process group)."""
    _pass_on(pid, signal.SIGINT)


def _pass_on(pid: int, sig: int) -> None:
    STOPPED["by_user"] = True  # ranks that then vanish were stopped, not crashed
    platform.signal_tree(pid, sig)


def _restarted(rec: RunRecord) -> str:
    n = attempts.count(rec)
    return f", started {n} times (steps counted from 0 each time)" if n > 1 else ""


def summary(rec: RunRecord, listener: Listener, code: int | None, record: str | None) -> str:
    hosts = sorted({r.host for r in listener.ranks.values()})
    full = [st for st in rec.steps if st.complete(rec.world_size)]
    part = rec.parts.get(HISTORY)  # what a long run's thinned steps said, counted before
    thinned = (part.emptied_full, part.emptied_differ) if isinstance(part, History) else (0, 0)
    steps, seen = len(full) + thinned[0], complete_count(rec)
    ended = "the listener stopped" if code is None else f"the command exited with {code}"
    ranks = (
        f"{len(listener.ranks)} rank(s) on {', '.join(hosts)}{_restarted(rec)}, {seen} step(s), "
        f"{steps} of them captured in full"
        if listener.ranks
        else "no rank connected"
    )
    lines = [f"ddp-viz: {ended}; {ranks}" + (f", recorded to {record}" if record else "")]
    lines.extend(agreement_lines(rec, full, part if isinstance(part, History) else None))
    if listener.refused or listener.bad_lines:
        why = ", ".join(f"{n} × {reason}" for reason, n in listener.refused.items())
        lines.append(f"  refused: {why or 'none'}; malformed lines: {listener.bad_lines}")
    dropped = sum(listener.dropped.values())
    if dropped:
        lines.append(f"  {dropped} event(s) dropped by the ranks' queues")
    return "\n".join(lines + doctor_lines(rec))


def agreement_lines(rec: RunRecord, full: list, part: History | None) -> list[str]:
    """Whether every step captured in full had identical averages on every rank, compared
    bit for bit (a NaN equals a NaN: ranks that overflowed together agree), and from which
    step they were not finite."""
    emptied, differ = (part.emptied_full, part.emptied_differ) if part else (0, 0)
    if not full and not emptied:
        return []
    same = differ == 0 and all(averages_identical(st) is not False for st in full)
    bad = [st.step for st in full if non_finite_average(st)]
    if part is not None and part.first_non_finite is not None:
        bad.append(part.first_non_finite)
    if not same:
        return ["  ✗ averaged gradients differ between ranks"]
    tail = f"; not finite (NaN or inf) from step {min(bad) + 1} on" if bad else ""
    return [f"  ✓ averaged gradients identical on every rank at every step captured in full{tail}"]


def doctor_lines(rec: RunRecord) -> list[str]:
    """The doctor's findings for the report (each hang with every rank's stack), and the
    straggler verdict."""
    if rec.run is None:
        return []
    lines = ["  " + line for _, said in findings(rec) for line in said]
    said = straggler_text(attempts.last(rec))
    if said is not None:
        lines.append("  " + said)
    if rec.steps or findings(rec):
        lines.append(verdict(rec))
    return lines
