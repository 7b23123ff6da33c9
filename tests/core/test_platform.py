"""What differs by system (ddp_viz/platform.py): the start method, paths spelled the Windows way,
and stopping a process tree or a process whose parent died, on real processes."""

from __future__ import annotations

import ntpath
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import PurePosixPath, PureWindowsPath

import psutil
import pytest

from ddp_viz import platform
from ddp_viz.platform import StartMethod, choose_start_method

LINUX_METHODS = ("fork", "spawn", "forkserver")


@pytest.mark.parametrize(
    ("system", "available", "expected"),
    [
        ("linux", LINUX_METHODS, StartMethod.FORKSERVER),
        ("darwin", LINUX_METHODS, StartMethod.SPAWN),  # fork is unsafe there, though present
        ("win32", ("spawn",), StartMethod.SPAWN),
        ("linux", ("fork", "spawn"), StartMethod.SPAWN),  # a Linux Python without forkserver
    ],
)
def test_forkserver_only_where_it_is_safe(system, available, expected) -> None:
    assert choose_start_method({}, available, system) is expected


@pytest.mark.parametrize(
    ("asked", "expected"), [("spawn", "spawn"), (" ForkServer ", "forkserver")]
)
def test_the_environment_variable_overrides(asked: str, expected: str) -> None:
    env = {platform.START_METHOD_VAR: asked}
    assert choose_start_method(env, LINUX_METHODS, "linux").value == expected
    assert choose_start_method({platform.START_METHOD_VAR: ""}, LINUX_METHODS, "linux").value == (
        "forkserver"
    )


def test_an_unknown_or_absent_method_is_an_error_not_a_silent_fallback() -> None:
    with pytest.raises(ValueError, match="'fork': expected one of forkserver, spawn"):
        choose_start_method({platform.START_METHOD_VAR: "fork"}, LINUX_METHODS, "linux")
    with pytest.raises(ValueError, match="forkserver: not available on win32"):
        choose_start_method({platform.START_METHOD_VAR: "forkserver"}, ("spawn",), "win32")


def test_this_process_follows_the_variable_it_was_started_with() -> None:
    """``make test`` under ``DDP_VIZ_START_METHOD=spawn`` really runs ranks spawned."""
    asked = os.environ.get(platform.START_METHOD_VAR)
    expected = asked.strip().lower() if asked else "forkserver"
    assert platform.start_method().value == expected


@pytest.mark.parametrize(
    ("system", "expected"), [("linux", "lo"), ("darwin", "lo0"), ("win32", None)]
)
def test_gloo_stays_on_the_loopback_interface_by_its_local_name(system, expected) -> None:
    assert platform.loopback_interface(system) == expected


def test_ranks_get_one_thread_and_a_chosen_interface_is_kept() -> None:
    env = {"OMP_NUM_THREADS": "8", "GLOO_SOCKET_IFNAME": "eth1"}
    platform.rank_env_defaults(env)
    assert env == {"OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "eth1"}


# --- paths, spelled as Windows spells them ------------------------------------------------------
@pytest.mark.parametrize(
    "folder",
    [
        r"C:\Users\José Núñez\AppData\Local\Temp\ddp-viz-run3-x1y2",
        r"D:\Temp Files\ddp-viz-run12-ab",
        r"\\server\share\Søren Ødegård\ddp-viz-run1-zz",
    ],
)
def test_the_store_file_on_windows_keeps_drive_spaces_and_accents(folder: str) -> None:
    store = platform.store_file(PureWindowsPath(folder))
    assert store == folder + "\\store"
    assert ntpath.dirname(store) == folder and ntpath.basename(store) == "store"


def test_the_store_file_on_posix() -> None:
    folder = "/home/José Núñez/tmp/ddp-viz-run3-x1y2"
    assert platform.store_file(PurePosixPath(folder)) == folder + "/store"


def test_a_run_folder_is_made_in_the_system_temporary_folder_for_this_user_only(
    tmp_path, monkeypatch
) -> None:
    home = tmp_path / "Jörg Ünal's temp"  # non-ASCII and a space, as in a Windows user's home
    home.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(home))
    first, second = platform.run_folder(7), platform.run_folder(7)
    assert first.parent == home and second.parent == home and first != second
    assert first.name.startswith("ddp-viz-run7-")
    if os.name == "posix":
        assert first.stat().st_mode & 0o777 == 0o700


# --- process trees and parent death, on real processes --------------------------------------
TREE = """
import subprocess, sys, threading
child = subprocess.Popen([sys.executable, "-c", "import threading; threading.Event().wait()"])
print(child.pid, flush=True)
threading.Event().wait()
"""


@pytest.mark.parametrize("posix", [True, False], ids=["process-group", "psutil-tree"])
@pytest.mark.parametrize("stop", ["kill_tree", "signal_tree"])
def test_stopping_a_tree_ends_the_head_and_what_it_started(posix, stop, monkeypatch) -> None:
    """Both ways, here: the process group (POSIX) and psutil's tree (Windows' way)."""
    if posix and os.name != "posix":
        pytest.skip("no process groups on Windows")
    head = subprocess.Popen(
        [sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True, **platform.new_group()
    )
    assert head.stdout is not None
    child = psutil.Process(int(head.stdout.readline()))
    assert child.is_running()
    monkeypatch.setattr(platform, "POSIX", posix)
    if stop == "kill_tree":
        platform.kill_tree(head.pid)
    else:
        platform.signal_tree(head.pid, signal.SIGTERM)
    head.wait(10)
    _gone, alive = psutil.wait_procs([child], timeout=10)
    for proc in alive:
        proc.kill()
    assert alive == [] and head.returncode != 0
    head.stdout.close()


ORPHAN = """
import subprocess, sys
cmd = [sys.executable, "-c", sys.argv[1]]
watched = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
print(watched.stdout.readline().strip(), flush=True)  # its pid, once it watches us
"""
WATCHER = """
import os, threading
from ddp_viz import platform
platform.LINUX = {linux}
platform.die_with_parent(poll=True)
print(os.getpid(), flush=True)
threading.Event().wait()
"""


@pytest.mark.parametrize("linux", [True, False], ids=["prctl", "polling-thread"])
def test_a_process_ends_when_its_parent_dies(linux: bool) -> None:
    """Linux's parent-death signal, and the watcher thread other systems use, each end the
    child once its parent is gone (the parent here exits as soon as the child watches it)."""
    if linux and not sys.platform.startswith("linux"):
        pytest.skip("prctl is Linux's")
    parent = subprocess.run(
        [sys.executable, "-c", ORPHAN, WATCHER.format(linux=linux)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    orphan = psutil.Process(int(parent.stdout))
    _gone, alive = psutil.wait_procs([orphan], timeout=15)
    for proc in alive:
        proc.kill()
    assert alive == []


# --- a watched command's output ------------------------------------------------------------
def _pass_through(ours: int, theirs: int) -> bytes:
    os.write(theirs, b"step 1\nstep 2\n")
    os.close(theirs)
    return os.read(ours, 100)


def test_output_to_a_file_goes_through_a_pipe(tmp_path) -> None:
    with open(tmp_path / "out.txt", "wb") as f:
        ours, theirs = platform.output_pair(f.fileno())
    assert not os.isatty(theirs)
    assert _pass_through(ours, theirs) == b"step 1\nstep 2\n"
    os.close(ours)


@pytest.mark.skipif(os.name != "posix", reason="no pty on Windows: a pipe there")
def test_output_to_a_terminal_gets_a_terminal_of_its_size_passing_newlines_as_written() -> None:
    import fcntl
    import pty
    import struct
    import termios

    term, other = pty.openpty()  # stands for the user's terminal, 37 rows × 111 columns
    fcntl.ioctl(term, termios.TIOCSWINSZ, struct.pack("HHHH", 37, 111, 0, 0))
    ours, theirs = platform.output_pair(term)
    assert os.isatty(theirs)
    size = struct.unpack("HHHH", fcntl.ioctl(theirs, termios.TIOCGWINSZ, b"\0" * 8))
    assert size[:2] == (37, 111)
    assert _pass_through(ours, theirs) == b"step 1\nstep 2\n"  # not "\r\n"
    for fd in (ours, term, other):
        os.close(fd)


def test_a_rank_whose_engine_died_before_it_started_ends_at_once() -> None:
    """A spawned rank is told its engine's pid: gone already, the rank ends instead of running
    on under whoever adopted it (it left three processes behind once, under load)."""
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    code = f"from ddp_viz import platform\nplatform.die_with_parent(parent={gone.stdout.strip()})\n"
    out = subprocess.run(
        [sys.executable, "-c", code + "print('still running')"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "still running" not in out.stdout


WAITER = """
import subprocess, sys
code = '''
import threading
from ddp_viz import platform
def wait_here():
    print("ready", flush=True)
    threading.Event().wait()
platform.stacks_on_request()
wait_here()
'''
child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
print(child.stdout.readline().strip(), child.pid, flush=True)
child.wait()
"""


@pytest.mark.posix_signals
def test_a_stuck_process_asked_for_its_stacks_says_where_it_waits(tmp_path) -> None:
    """What a stuck torchrun run's workers print before it is stopped: the head (torchrun's
    place) is not asked, the process under it prints the function it waits in."""
    err = tmp_path / "stderr"
    with err.open("w") as out:
        head = subprocess.Popen(
            [sys.executable, "-c", WAITER], stdout=subprocess.PIPE, stderr=out, text=True
        )
        assert head.stdout is not None
        said, pid = head.stdout.readline().split()
        assert said == "ready"
        try:
            assert platform.request_stacks(head.pid) == [int(pid)]
            stacks = psutil.Process(int(pid))
            deadline = time.monotonic() + 10
            while "wait_here" not in err.read_text() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert stacks.is_running()  # asked, not ended
            # its wait ("ready" is said from inside it: asked between the word and the call,
            # a loaded machine's child was still at the module's last line)
            assert re.search(r"line [56] in wait_here", err.read_text()), err.read_text()
        finally:
            psutil.Process(int(pid)).kill()
            head.wait(10)
            head.stdout.close()
