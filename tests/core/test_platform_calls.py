"""Only ``ddp_viz/platform.py`` may call what exists on one system and not another: process
groups (``os.killpg``, ``start_new_session``), POSIX-only signals (``signal.SIGKILL`` …),
``prctl``, ``os.nice``, a multiprocessing start method by name, an event loop's
``add_signal_handler``. Anywhere else such a call works on Linux and breaks on Windows (or
macOS) where no machine here would notice: the source is scanned, code only (an AST, so
docstrings and comments that name these are prose and pass)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

# they read ddp-viz's own source files, which a mutation run rewrites (make mutants)
pytestmark = pytest.mark.source

SRC = Path(__file__).parents[2] / "src" / "ddp_viz"
PLATFORM = SRC / "platform.py"

ATTRIBUTES = {
    ("os", "killpg"): "process groups are POSIX's",
    ("os", "setsid"): "sessions are POSIX's",
    ("os", "setpgrp"): "process groups are POSIX's",
    ("os", "getpgid"): "process groups are POSIX's",
    ("os", "nice"): "os.nice is POSIX's",
    ("os", "fork"): "Windows has no fork",
    ("os", "uname"): "os.uname is POSIX's (socket.gethostname is everywhere)",
    **{
        ("signal", name): f"signal.{name} is not defined on Windows"
        for name in ("SIGKILL", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGSTOP", "SIGCONT")
    },
}
METHODS = {
    "prctl": "prctl is Linux's",
    "add_signal_handler": "Windows' event loops have none",
    "set_start_method": "the start method is chosen once, by the platform module",
    "set_forkserver_preload": "there is a forkserver only where the platform module chose it",
}
KEYWORDS = {
    "start_new_session": "sessions are POSIX's",
    "preexec_fn": "Windows has no preexec_fn",
}
START_METHODS = {"fork", "forkserver", "spawn"}
MODULES = {
    name: f"Windows has no {name} module" for name in ("fcntl", "pty", "termios", "resource")
}


def offences(source: str) -> list[tuple[int, str]]:
    """Each POSIX-only (or start-method) call in ``source``: its line and why it may not be."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            owner = node.value.id if isinstance(node.value, ast.Name) else ""
            why = ATTRIBUTES.get((owner, node.attr)) or METHODS.get(node.attr)
            if why:
                found.append((node.lineno, f"{owner or '…'}.{node.attr}: {why}"))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES:
                    found.append((node.lineno, f"import {alias.name}: {MODULES[alias.name]}"))
        elif isinstance(node, ast.ImportFrom) and node.module in MODULES:
            found.append((node.lineno, f"from {node.module} import …: {MODULES[node.module]}"))
        elif isinstance(node, ast.ImportFrom) and node.module in ("os", "signal"):
            for alias in node.names:
                why = ATTRIBUTES.get((node.module, alias.name))
                if why:
                    found.append((node.lineno, f"from {node.module} import {alias.name}: {why}"))
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in KEYWORDS:
                    found.append((node.lineno, f"{kw.arg}=: {KEYWORDS[kw.arg]}"))
            for arg in [*node.args, *(kw.value for kw in node.keywords)]:
                if isinstance(arg, ast.Constant) and arg.value in START_METHODS:
                    found.append((node.lineno, f"start method {arg.value!r} by name"))
    return found


def test_no_module_but_the_platform_one_calls_a_posix_only_api() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}: {why}"
        for path in sorted(SRC.rglob("*.py"))
        if path != PLATFORM
        for line, why in offences(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_platform_module_is_where_they_are() -> None:
    """The scan finds them where they are allowed: it is not blind."""
    said = {why.split(":")[0] for _, why in offences(PLATFORM.read_text(encoding="utf-8"))}
    allowed = {
        "import pty",
        "import termios",
        "os.killpg",
        "os.nice",
        "….prctl",
        "loop.add_signal_handler",
        "ctx.set_forkserver_preload",
    }
    assert allowed <= said


@pytest.mark.parametrize(
    "line",
    [
        "os.killpg(pid, 9)",
        "os.kill(pid, signal.SIGKILL)",
        "from signal import SIGKILL",
        "libc.prctl(1, 9, 0, 0, 0)",
        "subprocess.Popen(cmd, start_new_session=True)",
        "subprocess.Popen(cmd, preexec_fn=os.setsid)",
        "mp.get_context('forkserver')",
        "multiprocessing.get_context(method='spawn')",
        "mp.set_start_method(m)",
        "ctx.set_forkserver_preload(['x'])",
        "loop.add_signal_handler(sig, stop)",
        "os.nice(19)",
        "import termios",
        "from pty import openpty",
        "host = os.uname().nodename",
    ],
)
def test_each_kind_of_call_is_caught(line: str) -> None:
    assert offences(f"import os, signal\n{line}\n"), line


@pytest.mark.parametrize(
    "line",
    [
        "os.kill(pid, signal.SIGTERM)",
        "signal.signal(signal.SIGINT, handler)",
        '"""Stopped with SIGKILL, forked from a forkserver (spawn elsewhere)."""',
        "name = 'forkserver ranks'",
        "platform.kill_tree(pid)",
        "proc.kill()",
    ],
)
def test_what_every_system_has_passes(line: str) -> None:
    assert offences(f"import os, signal\n{line}\n") == []
