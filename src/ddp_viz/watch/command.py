"""``ddp-viz watch [--record FILE] [--listen HOST:PORT] -- COMMAND …``: run the command with
every Python process in it watched, record what its ranks send, and exit with its status.

No torch and no Qt here: the command (typically ``torchrun``) is the distributed engine; this
process only listens, records and reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import TextIO

import ddp_viz
from ddp_viz.model import protocol
from ddp_viz.model import watch_wire as wire
from ddp_viz.model.timeline import RunRecord
from ddp_viz.model.watch_events import WatchSummary
from ddp_viz.watch.listener import RUN, Listener

BOOT = Path(__file__).parent / "boot"
DRAIN_S = 5.0  # after the command ends: how long the last connections may take to close
STOP_S = 10.0  # after Ctrl-C is passed on: how long the command may take to stop


def parse_address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"--listen: expected HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def watched_env(addr: str, token: str) -> dict[str, str]:
    """The command's environment: our sitecustomize first on PYTHONPATH, where to find this
    package (appended to the path, after the script's own), the listener and the token."""
    env = dict(os.environ)
    path = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(BOOT) + (os.pathsep + path if path else "")
    env["DDP_VIZ_HOME"] = str(Path(ddp_viz.__file__).resolve().parent.parent)
    env[wire.ADDR_ENV], env[wire.TOKEN_ENV] = addr, token
    return env


def watch(command: list[str], record: str | None, listen: str, out: TextIO = sys.stderr) -> int:
    if not command:
        print("ddp-viz watch: give the command after --, e.g. -- torchrun …", file=out)
        return 2
    try:
        host, port = parse_address(listen)
    except ValueError as exc:
        print(f"ddp-viz watch: {exc}", file=out)
        return 2
    return asyncio.run(_watch(command, record, host, port, out))


async def _watch(command: list[str], record: str | None, host: str, port: int, out: TextIO) -> int:
    rec = RunRecord()
    file = open(record, "w", encoding="utf-8") if record else None  # noqa: SIM115
    idle = asyncio.Event()

    def sink(event: protocol.Event) -> None:
        rec.apply(event)
        if file is not None:
            file.write(protocol.encode(event) + "\n")

    listener = Listener(wire.new_token(), sink, host, port)
    try:
        bound, port = await listener.start()
    except OSError as exc:
        print(f"ddp-viz watch: cannot listen on {host}:{port}: {exc}", file=out)
        return 2
    print(f"ddp-viz watch: listening on {bound}:{port}", file=out)
    t0 = time.monotonic()
    env = watched_env(f"{bound}:{port}", listener.token)
    try:
        proc = await asyncio.create_subprocess_exec(*command, env=env, start_new_session=True)
    except OSError as exc:
        print(f"ddp-viz watch: cannot start {command[0]}: {exc}", file=out)
        await listener.close()
        return 127
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # Ctrl-C stops the whole tree, then us
        loop.add_signal_handler(sig, _pass_on, proc.pid, sig)
    code = await proc.wait()
    code = 128 - code if code < 0 else code  # killed by a signal: the shell's convention
    deadline = time.monotonic() + DRAIN_S
    while listener.connections and time.monotonic() < deadline:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(idle.wait(), 0.05)
    await listener.close()
    done = len(rec.complete_steps())
    sink(WatchSummary(RUN, code, dict(listener.refused), listener.bad_lines, listener.dropped))
    if rec.run is not None:
        sink(protocol.RunFinished(RUN, done, time.monotonic() - t0))
    if file is not None:
        file.close()
    print(summary(rec, listener, code, record), file=out)
    return code


def _pass_on(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def summary(rec: RunRecord, listener: Listener, code: int, record: str | None) -> str:
    hosts = sorted({r.host for r in listener.ranks.values()})
    steps = len(rec.complete_steps())
    agree = [st.averaged_agree() for st in rec.complete_steps()]
    lines = [
        f"ddp-viz watch: the command exited with {code}; {len(listener.ranks)} rank(s) on "
        f"{', '.join(hosts) or 'no host'}, {steps} complete step(s)"
        + (f", recorded to {record}" if record else ""),
    ]
    if agree:
        same = all(agree)
        lines.append(
            "  ✓ averaged gradients identical on every rank at every step"
            if same
            else "  ✗ averaged gradients differ between ranks"
        )
    if listener.refused or listener.bad_lines:
        why = ", ".join(f"{n} × {reason}" for reason, n in listener.refused.items())
        lines.append(f"  refused: {why or 'none'}; malformed lines: {listener.bad_lines}")
    dropped = sum(listener.dropped.values())
    if dropped:
        lines.append(f"  {dropped} event(s) dropped by the ranks' queues")
    return "\n".join(lines)
