"""Drive the engine process from plain Python (the CLI, benchmarks and engine tests).

The window drives the same process through QProcess; this client uses a pipe and a reader
thread. It knows nothing of torch: the engine is a child process.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from ddp_viz import platform
from ddp_viz.model import protocol, registry
from ddp_viz.model.decoder import LineDecoder, Skimmed
from ddp_viz.model.event_base import EVENT_TYPES
from ddp_viz.model.scenario import Scenario

TERMINAL = (protocol.RunFinished, protocol.RunFailed, protocol.RunCancelled)


def per_step_kinds() -> frozenset[str]:
    """Every step's events (their classes say ``per_step``, a kind's too): what a reader that
    only passes lines on can leave undecoded."""
    registry.load()  # the kinds' events are defined as their folders are imported
    return frozenset(name for name, cls in EVENT_TYPES.items() if cls.per_step)


def engine_command() -> list[str]:
    return [sys.executable, "-m", "ddp_viz.engine"]


def engine_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env["OMP_NUM_THREADS"] = "1"
    return env


Event = protocol.Event | Skimmed


class EngineClient:
    """A running engine. Use as a context manager; ``close()`` leaves no process behind."""

    def __init__(self, stderr: Any = None, skim: frozenset[str] = frozenset()) -> None:
        """``skim``: kinds of event handed over as :class:`Skimmed` with their line, not
        decoded, each run of them in a row as one (see :meth:`LineDecoder.batch`)."""
        self._skim = skim
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            engine_command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr if stderr is not None else subprocess.DEVNULL,
            env=engine_env(),
            bufsize=-1,
            **platform.new_group(),  # Ctrl-C in a terminal reaches us, and we stop the engine
        )
        # the reader hands over everything one read produced at once: one queue operation per
        # chunk, not per event, keeps a fast stream's cost off the ranks' cores
        self.events: queue.Queue[list[tuple[Event, bytes]] | Exception | None] = queue.Queue()
        self._ready: collections.deque[tuple[Event, bytes]] = collections.deque()
        self.bad_lines: list[str] = []
        self._next_run = 1
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        decoder = LineDecoder(self._skim)
        while chunk := self.proc.stdout.read1(1 << 16):
            decoder.feed(chunk)
            batch = []
            for item, raw in decoder.batch():  # skimmed lines in a row come as one
                if isinstance(item, protocol.ProtocolError):
                    self.bad_lines.append(str(item))
                else:
                    batch.append((item, raw))
            if batch:
                self.events.put(batch)
        last = decoder.close()
        if last is not None:
            self.bad_lines.append(str(last))
        self.events.put(None)  # engine closed its stdout

    @property
    def pending(self) -> bool:
        """Whether events that already arrived are waiting to be taken."""
        return bool(self._ready) or not self.events.empty()

    def send(self, cmd: protocol.Command) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((protocol.encode_command(cmd) + "\n").encode())
        self.proc.stdin.flush()

    def next_event(self, timeout: float = 60.0) -> Event:
        return self.next_event_and_line(timeout)[0]

    def next_event_and_line(self, timeout: float = 60.0) -> tuple[Event, bytes]:
        """The next event and the line the engine wrote for it."""
        if not self._ready:
            item = self.events.get(timeout=timeout)
            if item is None:
                self.events.put(None)  # stays gone for every later call
                raise EngineGone(f"engine exited (code {self.proc.poll()})")
            if isinstance(item, Exception):
                raise item
            self._ready.extend(item)
        return self._ready.popleft()

    def wait_for(self, kind: type[protocol.Event], timeout: float = 60.0) -> protocol.Event:
        deadline = time.monotonic() + timeout
        while True:
            event = self.next_event(max(0.01, deadline - time.monotonic()))
            if isinstance(event, kind):
                return event

    def run(
        self, scenario: Scenario, fault: dict[str, Any] | None = None, timeout: float = 120.0
    ) -> Iterator[protocol.Event]:
        """Start a run and yield its events until (and including) the terminal one."""
        for event, _line in self.run_with_lines(scenario, fault, timeout):
            yield event

    def run_with_lines(
        self, scenario: Scenario, fault: dict[str, Any] | None = None, timeout: float = 120.0
    ) -> Iterator[tuple[Event, bytes]]:
        """:meth:`run`, with each event's line as the engine wrote it. Kinds the client skims
        come as :class:`Skimmed`, unread, so not filtered by run: a client that skims runs one
        run at a time (``ddp-viz run --json``).

        ``timeout`` is how long the engine may stay silent, not how long the run may take: a
        run of many steps, or ranks that start slowly (spawned, on macOS and Windows), is alive
        as long as events come, and the engine itself ends a run whose ranks hang."""
        run_id = self._next_run
        self._next_run += 1
        self.send(protocol.RunCommand(run=run_id, scenario=scenario.to_dict(), fault=fault or {}))
        while True:
            try:
                event, line = self.next_event_and_line(timeout)
            except queue.Empty:
                silent = f"run {run_id}: the engine sent nothing for {timeout:g} s"
                raise TimeoutError(silent) from None
            if isinstance(event, protocol.CommandError):
                raise RuntimeError(event.message)
            if getattr(event, "run", run_id) != run_id:
                continue
            yield event, line
            if isinstance(event, TERMINAL):
                return

    def close(self, timeout: float = 5.0) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                self.send(protocol.ShutdownCommand())
            with contextlib.suppress(OSError, ValueError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout)
        if self.proc.stdout:
            self.proc.stdout.close()

    def __enter__(self) -> EngineClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EngineGone(RuntimeError):
    """The engine process ended unexpectedly."""
