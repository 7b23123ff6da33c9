"""Everything that differs by operating system, in one place (tests/core/test_platform_calls.py
holds that nothing else in ``src/`` calls a POSIX-only API).

- **How ranks start**: a ``forkserver`` that imported torch once, where it is safe (Linux); a
  fresh ``spawn``\\ ed interpreter per rank elsewhere. Windows has no fork at all, and on macOS
  Python has defaulted to spawn since 3.8 because the system's libraries may start threads that a
  fork does not carry over. ``DDP_VIZ_START_METHOD=spawn`` forces the Windows model on Linux,
  which is how it is tested here.
- **How a process tree stops**: a process group (``start_new_session`` + ``os.killpg``) on
  POSIX; on Windows, psutil's view of the tree (a maintained library, not hand-written walking).
- **How a process learns its parent died**: Linux's ``prctl(PR_SET_PDEATHSIG)``; elsewhere a
  daemon thread that watches the parent with psutil.
- **Which signals exist**: ``SIGKILL`` does not on Windows; ``add_signal_handler`` is POSIX-only;
  a stuck process is asked for its stacks with ``SIGUSR1``, which Windows lacks.

Imports neither torch nor Qt nor the engine: the engine, the client, the watch command and the
bench all use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import faulthandler
import functools
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Collection, Mapping, MutableMapping, Sequence
from enum import StrEnum
from multiprocessing.context import BaseContext
from pathlib import Path, PurePath
from typing import Any

import psutil

START_METHOD_VAR = "DDP_VIZ_START_METHOD"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PARENT_POLL_S = 0.5  # how often a watcher thread looks at the parent (no prctl there)

POSIX = os.name == "posix"
LINUX = sys.platform.startswith("linux")

# The strongest stop there is: SIGKILL on POSIX; Windows' os.kill with SIGTERM is
# TerminateProcess, just as final.
KILL: int = getattr(signal, "SIGKILL", signal.SIGTERM)
# What a terminal's Ctrl-C or a service manager sends; SIGBREAK is Windows' Ctrl-Break.
STOP_SIGNALS: tuple[int, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGBREAK") if hasattr(signal, name)
)


class StartMethod(StrEnum):
    FORKSERVER = "forkserver"
    SPAWN = "spawn"


def choose_start_method(
    env: Mapping[str, str], available: Collection[str], system: str
) -> StartMethod:
    """The start method for ranks: ``env[DDP_VIZ_START_METHOD]`` if set (an unknown or
    unavailable one is an error, not a silent fallback), else forkserver on Linux, spawn
    elsewhere."""
    asked = env.get(START_METHOD_VAR, "").strip().lower()
    if asked:
        try:
            method = StartMethod(asked)
        except ValueError:
            known = ", ".join(m.value for m in StartMethod)
            raise ValueError(f"{START_METHOD_VAR}={asked!r}: expected one of {known}") from None
        if method.value not in available:
            raise ValueError(f"{START_METHOD_VAR}={asked}: not available on {system}")
        return method
    if system.startswith("linux") and StartMethod.FORKSERVER.value in available:
        return StartMethod.FORKSERVER
    return StartMethod.SPAWN


@functools.cache
def start_method() -> StartMethod:
    """This process's choice, made once (ranks of one engine all start the same way)."""
    return choose_start_method(os.environ, mp.get_all_start_methods(), sys.platform)


def rank_context(preload: Sequence[str]) -> BaseContext:
    """The multiprocessing context ranks start from. ``preload``: modules the forkserver
    imports once before it forks (ignored under spawn, where each rank imports them itself)."""
    method = start_method()
    ctx = mp.get_context(method.value)
    if method is StartMethod.FORKSERVER:
        ctx.set_forkserver_preload(list(preload))
    return ctx


def probe_context() -> BaseContext:
    """A context for the bench's short-lived measuring processes: fork on Linux (the probe's
    own start-up is not what it measures), spawn elsewhere."""
    return mp.get_context("fork" if LINUX else "spawn")


# --- process trees --------------------------------------------------------------------------
def new_group() -> dict[str, Any]:
    """``Popen`` keywords that put a child at the head of its own process tree, so a terminal's
    Ctrl-C reaches only us and the tree can be stopped as one."""
    if POSIX:
        return {"start_new_session": True}
    return {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}


def signal_tree(pid: int, sig: int) -> None:
    """Send ``sig`` to the tree headed by ``pid`` (started with :func:`new_group`). Gone already
    is fine."""
    if POSIX:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, sig)
        return
    try:
        head = psutil.Process(pid)
        tree = [*head.children(recursive=True), head]
    except psutil.Error:
        return
    # Windows has no group signal, and a console Ctrl-C event reaches every process on that
    # console (us too): each process of the tree is ended, leaves first
    for proc in tree:
        with contextlib.suppress(psutil.Error):
            proc.terminate()


def kill_tree(pid: int) -> None:
    """End the tree headed by ``pid`` outright."""
    if POSIX:
        signal_tree(pid, KILL)
        return
    with contextlib.suppress(psutil.Error):
        head = psutil.Process(pid)
        for proc in [*head.children(recursive=True), head]:
            with contextlib.suppress(psutil.Error):
                proc.kill()


def on_stop_signals(loop: asyncio.AbstractEventLoop, handler: Callable[[int], None]) -> bool:
    """Call ``handler(sig)`` from ``loop`` on Ctrl-C or SIGTERM. False where the loop cannot
    (Windows' loops have no ``add_signal_handler``: Ctrl-C there raises KeyboardInterrupt)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, handler, sig)
    except (NotImplementedError, RuntimeError, ValueError):
        return False
    return True


# --- parent death ---------------------------------------------------------------------------
def die_with_parent(sig: int = KILL, poll: bool = True, parent: int | None = None) -> None:
    """End this process when its parent dies, so nothing outlives the engine. Linux: the kernel
    sends ``sig``. Elsewhere, with ``poll``, a daemon thread exits the process once the parent
    is gone (never in a forkserver, which must stay single-threaded to fork safely).

    ``parent``: the pid the parent had before it started us (a spawned rank is told it). Read
    here instead, a parent that died before this call is not noticed: ``getppid`` then names
    whoever adopted us, alive, so POSIX's adopter, pid 1, also counts as a dead parent."""
    if parent is None:
        parent = os.getppid()
        if POSIX and parent == 1:
            os._exit(0)
    if LINUX:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    elif poll:
        _poll_parent(parent)
    if not parent_alive(parent):  # gone before the signal could be asked for
        os._exit(0)


def parent_alive(parent: int) -> bool:
    """Whether ``parent`` still runs and is still our parent (POSIX reparents an orphan)."""
    if POSIX and os.getppid() != parent:
        return False
    return psutil.pid_exists(parent)


def _poll_parent(parent: int) -> None:
    try:
        proc = psutil.Process(parent)
    except psutil.Error:
        os._exit(0)

    def poll() -> None:
        while _running(proc):
            threading.Event().wait(PARENT_POLL_S)
        os._exit(0)

    threading.Thread(target=poll, name="ddp-viz-parent-poll", daemon=True).start()


def _running(proc: psutil.Process) -> bool:
    """False once ``proc`` exited, even while it waits as a zombie for its own parent to
    collect it, and once its pid belongs to another process (psutil checks the start time)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# --- paths ---------------------------------------------------------------------------------
def run_folder(run: int) -> Path:
    """A fresh folder for one run's rendezvous file, only this user's (``mkdtemp``: 0700), in
    the system's temporary folder (``TMPDIR``, ``TEMP`` …), never a path spelled by hand."""
    return Path(tempfile.mkdtemp(prefix=f"ddp-viz-run{run}-"))


def store_file(folder: PurePath) -> str:
    """The ``FileStore`` file in a run's folder, spelled as this system spells paths (a
    ``PureWindowsPath`` gives ``C:\\…\\store``): torch's FileStore takes a plain string."""
    return str(folder / "store")


# --- other differences ----------------------------------------------------------------------
def output_pair(fd: int) -> tuple[int, int]:
    """(our end, the child's end) for a child's output that we pass on to ``fd``: where ``fd``
    is a terminal on POSIX, a terminal of the child's own, sized as ours and passing bytes as
    written (so it buffers and colours its lines as it would have); a pipe otherwise (Windows
    has no pty)."""
    if not POSIX or not os.isatty(fd):
        return os.pipe()
    import fcntl
    import pty
    import termios

    ours, theirs = pty.openpty()
    with contextlib.suppress(OSError):
        fcntl.ioctl(theirs, termios.TIOCSWINSZ, fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    attrs = termios.tcgetattr(theirs)
    attrs[1] &= ~termios.OPOST  # no "\n" -> "\r\n": ours adds that itself
    termios.tcsetattr(theirs, termios.TCSANOW, attrs)
    return ours, theirs


def lower_priority(niceness: int) -> None:
    """Make this process background compute: ``nice`` on POSIX, the idle class on Windows."""
    with contextlib.suppress(OSError, psutil.Error):
        if POSIX:
            os.nice(niceness)
        else:
            psutil.Process().nice(getattr(psutil, "IDLE_PRIORITY_CLASS", 0x40))


def loopback_interface(system: str = sys.platform) -> str | None:
    """The loopback interface's name for ``GLOO_SOCKET_IFNAME`` (ranks talk only on this
    machine): ``lo`` on Linux, ``lo0`` on macOS; None on Windows, where gloo picks by hostname."""
    if system.startswith("linux"):
        return "lo"
    if system == "darwin":
        return "lo0"
    return None


def rank_env_defaults(env: MutableMapping[str, str]) -> None:
    """What every rank process needs before it starts: one OpenMP thread each (ranks share the
    cores), and gloo on loopback."""
    env["OMP_NUM_THREADS"] = "1"
    ifname = loopback_interface()
    if ifname is not None:
        env.setdefault("GLOO_SOCKET_IFNAME", ifname)


# --- where a stuck process waits ------------------------------------------------------------
# SIGUSR1 on POSIX; Windows has no signal to ask with, so there a stuck process says nothing
STACKS_SIGNAL: int | None = getattr(signal, "SIGUSR1", None)


def stacks_on_request() -> None:
    """Print every thread's Python stack to stderr when :func:`request_stacks` asks. The dump
    is faulthandler's, written from the signal handler itself: a thread blocked in C++ (a gloo
    wait) is shown where it waits, without waiting for the interpreter."""
    if STACKS_SIGNAL is not None:
        faulthandler.register(STACKS_SIGNAL, all_threads=True)


def request_stacks(pid: int) -> list[int]:
    """Ask every process of the tree under ``pid`` (not ``pid`` itself) for its stacks; the
    pids asked. Each must have called :func:`stacks_on_request` (the signal's default action
    ends a process that did not)."""
    if STACKS_SIGNAL is None:
        return []
    try:
        tree = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    asked = []
    for proc in tree:
        with contextlib.suppress(psutil.Error):
            proc.send_signal(STACKS_SIGNAL)
            asked.append(proc.pid)
    return asked
