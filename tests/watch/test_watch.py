"""``ddp-viz watch`` around real torchrun runs of a script that knows nothing of ddp-viz:
every rank's steps are recorded, the averages are identical and the mean of the local
gradients, a script's own comm hook keeps its effect, the exit status is the script's, a
missing listener costs nothing, and Ctrl-C stops the whole tree."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import psutil
import pytest
import torch

from ddp_viz.kinds.watched import wire
from ddp_viz.kinds.watched.bench.overhead import teardown_abort_only
from ddp_viz.kinds.watched.history import HISTORY, complete_count
from ddp_viz.kinds.watched.watch.command import watched_env
from ddp_viz.model import protocol
from ddp_viz.model.tensors import is_summary, tensor_sample
from ddp_viz.model.timeline import record
from tests.conftest import still_running

pytestmark = pytest.mark.gloo

SCRIPT = Path(__file__).parents[1] / "data" / "watched" / "train.py"
HELLO = wire.Hello("intruder", 1, 1, 1, 2, 0.0, [])
HELLO = wire.Hello("intruder", 1, 1, 1, 2, 0.0, [])
BIN = Path(sys.executable).parent


def run_command(cmd: list[str], **kw) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
    """The command's result; run again, with a warning, while it ends in torch's teardown
    abort and nothing of ours (see ``TEARDOWN_ABORT``), three runs at most: a plain torchrun
    of the fp16-hook script, ddp-viz nowhere, aborted twice in a row in one suite. Any other
    failure, or that one three times, still fails the test."""
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    for _ in range(2):
        if done.returncode == 0 or not teardown_abort_only(done.stderr):
            break
        warnings.warn(f"torch's teardown abort; ran once more: {cmd}", stacklevel=2)
        done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return done


def torchrun(*args: str) -> list[str]:
    return [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2", str(SCRIPT), *args]


def watch(
    tmp_path: Path, *args: str, timeout: float = 120, budget: str = ""
) -> tuple[int, list, str]:
    rec = tmp_path / "watched.jsonl"
    cmd = [str(BIN / "ddp-viz"), "watch", "--record", str(rec), "--no-window"]
    cmd += ["--budget", budget] if budget else []
    cmd += ["--", *args]
    done = run_command(cmd, timeout=timeout)
    events = [protocol.decode(line) for line in rec.read_text().splitlines()]
    return done.returncode, events, done.stderr


@pytest.mark.slow
def test_an_unchanged_script_is_watched_and_its_exit_status_is_watchs(tmp_path) -> None:
    code, events, err = watch(tmp_path, *torchrun("--epochs", "2", "--exit-code", "3"))
    assert code == 1, err  # torchrun's own status when a worker exits with 3, as unwatched
    rec = record(events)
    assert rec.world_size == 2 and set(rec.pids) == {0, 1}
    # 64 rows, 2 ranks, batches of 8: 4 steps an epoch; every step of every rank reports its
    # timings, and the first at least is captured in full (more as the budget allows)
    assert len(rec.steps) == 2 * 4
    assert all(st.ranks[r].bucket_spans for st in rec.steps for r in (0, 1))
    assert len(rec.complete_steps()) == 8  # for a watched run: every rank's timings
    steps = [st for st in rec.steps if st.complete(2)]  # captured in full
    assert steps and steps[0].step == 0
    for st in steps:
        assert st.averaged_agree()  # every rank holds the same average...
        # ...and it is the mean of the ranks' own gradients (big tensors: their first values
        # and their mean, which the summaries carry)
        for name, values in st.averaged().items():
            locals_ = [rs.local[name] for rs in st.ranks.values()]
            want = [sum(v) / len(v) for v in zip(*map(tensor_sample, locals_), strict=True)]
            assert tensor_sample(values) == pytest.approx(want, abs=1e-6)
            if is_summary(values):
                mean = sum(t["mean"] for t in locals_) / len(locals_)
                assert values["mean"] == pytest.approx(mean, abs=1e-7)
        assert st.ranks_agree()
    hosts = [e for e in events if e.kind == "watched_rank"]
    assert {e.rank for e in hosts} == {0, 1} and all(e.pid in rec.pids.values() for e in hosts)
    summary = next(e for e in events if e.kind == "watch_summary")
    assert summary.exit_code == 1 and not summary.refused and summary.bad_lines == 0
    assert summary.dropped == {"0": 0, "1": 0}
    assert "✓ averaged gradients identical on every rank at every step captured in full" in err
    assert "8 step(s)" in err


@pytest.mark.slow
def test_the_ranks_capture_the_same_steps_in_full_so_their_averages_are_compared(
    tmp_path,
) -> None:
    # 200 steps on the default budget: a full capture costs far more than 2% of a step here,
    # so only some steps are captured in full, and each rank decides which by itself
    code, events, err = watch(tmp_path, *torchrun("--epochs", "50"))
    assert code == 0, err
    rec = record(events)
    full = {
        r: {st.step for st in rec.steps if r in st.ranks and st.ranks[r].params} for r in (0, 1)
    }
    both, either = full[0] & full[1], full[0] | full[1]
    assert 0 in both and len(either) < len(rec.steps) == 200  # some steps, not all
    # Chosen by time alone, 3 of 27 met. Now each rank's period is a power of two, so the
    # steps the rank with the longer period takes in full the other takes too (the ranks'
    # periods can still differ by a factor of two, so not every step of the other is shared)
    assert len(both) >= 0.8 * min(len(full[0]), len(full[1])), sorted(full[0] ^ full[1])
    assert all(rec.steps[s].averaged_agree() for s in both)
    # the tutorial's clean run: no diagnosis at all, over 200 steps (issue 45, 7)
    report = err[err.index("ddp-viz: the command exited") :]
    assert "✗" not in report, report
    assert report.rstrip().splitlines()[-1].startswith("ddp-viz verdict: ✓"), report


def test_the_full_capture_period_is_a_power_of_two_within_the_budget() -> None:
    from ddp_viz.kinds.watched.watch.capture import MAX_PERIOD, full_capture_period

    assert full_capture_period(0.001, 0.1, 0.02) == 1  # 1 ms a capture, 2 ms allowed
    assert full_capture_period(0.002, 0.1, 0.02) == 1
    assert full_capture_period(0.0021, 0.1, 0.02) == 2
    assert full_capture_period(0.05, 0.01, 0.02) == 256  # 250 steps' share per capture
    assert full_capture_period(10.0, 1e-9, 0.02) == MAX_PERIOD
    assert full_capture_period(10.0, 0.01, 1.0) == 1  # --budget 1: every step, whatever it costs
    from ddp_viz.kinds.watched.watch.capture import DEFAULT_BUDGET, _budget

    # set by hand, past the CLI's check: never a NaN in a forward's arithmetic
    assert [_budget(t) for t in ("nan", "inf", "-1", "0", "x", "")] == [DEFAULT_BUDGET] * 6
    assert _budget("0.5") == 0.5
    for capture in (0.003, 0.03, 0.3):
        p = full_capture_period(capture, 0.01, 0.02)
        assert p & (p - 1) == 0 and capture / p <= 0.02 * 0.01 < capture / (p / 2)


def _steps_recorded(path, n: int) -> bool:
    """Whether the record at ``path`` holds ``n`` complete steps yet."""
    if not path.exists():
        return False
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    try:
        return len(record([protocol.decode(line) for line in lines]).complete_steps()) >= n
    except protocol.ProtocolError:  # a line being written
        return False


def test_the_exit_status_is_the_commands(tmp_path) -> None:
    code, events, err = watch(tmp_path, sys.executable, "-c", "raise SystemExit(7)")
    assert code == 7
    # the recording's header, then the summary: no rank ever connected
    assert [e.kind for e in events] == ["recording", "watch_summary"]
    assert "the command exited with 7; no rank connected" in err


@pytest.mark.slow
def test_a_scripts_own_comm_hook_keeps_its_effect_and_is_watched(tmp_path) -> None:
    plain = tmp_path / "plain.pt"
    run = run_command(
        torchrun("--epochs", "1", "--fp16-hook", "--out", str(plain)),
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert run.returncode == 0, run.stderr
    watched = tmp_path / "watched.pt"
    code, events, err = watch(
        tmp_path, *torchrun("--epochs", "1", "--fp16-hook", "--out", str(watched)), budget="1"
    )
    assert code == 0, err
    a, b = torch.load(plain), torch.load(watched)
    assert all(torch.equal(a[k], b[k]) for k in a)  # the fp16 hook ran as it does unwatched
    rec = record(events)
    steps = rec.complete_steps()
    assert len(steps) == 4 and all(st.averaged_agree() for st in steps)
    # fp16 compression: the average is the mean of the locals only to half precision
    st = steps[0]
    for name, values in st.averaged().items():
        locals_ = [tensor_sample(rs.local[name]) for rs in st.ranks.values()]
        got, want = tensor_sample(values), [sum(v) / 2 for v in zip(*locals_, strict=True)]
        assert got == pytest.approx(want, rel=2e-3, abs=2e-3)
        assert got != pytest.approx(want, rel=1e-9, abs=0) or all(v == 0 for v in want)


@pytest.mark.slow
def test_without_a_listener_the_script_runs_as_if_unwatched(tmp_path) -> None:
    import socket

    with socket.socket() as s:  # a port that was free a moment ago: nobody listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**watched_env(f"127.0.0.1:{port}", "token"), "OMP_NUM_THREADS": "1"}
    out = tmp_path / "p.pt"
    run = run_command(
        torchrun("--epochs", "1", "--out", str(out)),
        env=env,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert out.exists() and "Traceback" not in run.stderr


@pytest.mark.posix_signals
def test_ctrl_c_stops_the_whole_tree(tmp_path) -> None:
    """Ctrl-C to ``ddp-viz watch`` reaches torchrun, torchrun stops its ranks, and the exit
    status says the run was interrupted. The ranks run in sessions of their own (torchrun
    starts them so): one left behind when torchrun dies first is reparented away from this
    test, so each rank is followed by the pid it reported, not found among our children."""
    rec = tmp_path / "r.jsonl"
    cmd = [str(BIN / "ddp-viz"), "watch", "--record", str(rec), "--no-window", "--"]
    proc = subprocess.Popen(
        [*cmd, *torchrun("--forever")], stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    left: list[psutil.Process] = []
    try:
        tree = watched_tree(proc, rec)  # torchrun and both ranks, while the ranks stream
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        left = still_running(list(tree.values()), timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for p in left:
            p.kill()
    err = proc.communicate(timeout=30)[1]  # EOF once nothing holds the pipe: read after kills
    assert not left, f"left running after Ctrl-C: {[n for n, p in tree.items() if p in left]}"
    events = [protocol.decode(line) for line in rec.read_text().splitlines()]
    (summary,) = [e for e in events if e.kind == "watch_summary"]
    # torchrun's agent turns SIGINT into its SignalException and exits with 1 once it has
    # stopped the ranks; a torchrun killed by a signal would give 128 + its number
    assert code == summary.exit_code == 1, (code, summary.exit_code, err[-2000:])
    assert "the command exited with 1" in err
    # the report follows, and a run the user stopped is no crash (issue 47, 14)
    assert summary.stopped and "✗ crash" not in err, err[-2000:]
    assert err.rstrip().splitlines()[-1].startswith("ddp-viz verdict: "), err[-2000:]


def watched_tree(proc: subprocess.Popen, rec: Path) -> dict[str, psutil.Process]:
    """``ddp-viz watch``'s torchrun and the two ranks, once both ranks stream their steps
    (the recording grows: read, not slept on): each rank by the pid its ``rank_started``
    event reports."""
    pids: dict[int, int] = {}
    lines: list[str] = []
    deadline = time.monotonic() + 120
    while len(lines) < 20 or len(pids) < 2:
        assert proc.poll() is None, f"watch exited with {proc.returncode} before the ranks ran"
        assert time.monotonic() < deadline, f"the ranks did not stream: {len(lines)} lines"
        lines = rec.read_text().splitlines()[:-1] if rec.exists() else []  # whole lines
        events = [protocol.decode(line) for line in lines]
        pids = {e.rank: e.pid for e in events if e.kind == "rank_started"}
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.2)
    tree = {f"rank {r}": psutil.Process(pid) for r, pid in sorted(pids.items())}
    (torchrun_,) = psutil.Process(proc.pid).children()
    tree["torchrun"] = torchrun_
    for name, p in tree.items():  # the pids are what they say they are
        assert ("train.py" if name.startswith("rank") else "torchrun") in " ".join(p.cmdline())
    return tree


@pytest.mark.slow
@pytest.mark.posix_signals
def test_hostile_peers_are_refused_while_a_real_run_streams_on(tmp_path) -> None:
    """The same attacks as the listener's own tests, against a real watched torchrun run:
    each is refused and counted, and the run loses nothing."""
    import asyncio
    import re

    from tests.watch.test_watch_listener import answering, connect, slow_loris

    async def flood(port: int) -> None:  # 100 MB for an answer, no newline
        _, writer, _ = await connect(port)
        try:
            for _ in range(100):
                writer.write(b"x" * (1 << 20))
                await writer.drain()
        except ConnectionError:
            pass  # refused part way
        writer.close()

    rec_path = tmp_path / "attacked.jsonl"
    cmd = [str(BIN / "ddp-viz"), "watch", "--record", str(rec_path), "--no-window"]
    # trains until stopped: the slow loris is only refused after the handshake's 5 s, and a
    # run that had ended by then closed its listener first (a flake when the run was quick)
    cmd += ["--budget", "1", "--", *torchrun("--forever")]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        first = proc.stderr.readline()
        port = int(re.search(r"listening on 127\.0\.0\.1:(\d+)", first).group(1))

        async def attack() -> None:
            await asyncio.gather(
                answering(port, b'{"version": 1, "host": "x"}\n'),  # no token
                answering(port, (wire.answer("wrong", "0" * 32, HELLO) + "\n").encode()),
                answering(port, os.urandom(4096).replace(b"\n", b" ") + b"\n"),
                flood(port),
                slow_loris(port),
            )

        asyncio.run(asyncio.wait_for(attack(), timeout=60))
        assert proc.poll() is None  # every attack was dealt with while the run went on
        # and the run trained on: 9 steps of both ranks in the record (flushed per event)
        # before Ctrl-C; on a busy machine the attacks could be over before DDP was built
        deadline = time.monotonic() + 120
        while not _steps_recorded(rec_path, 9) and time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.2)  # waits on the run itself: its end is an answer too
            if proc.poll() is not None:
                break
        proc.send_signal(signal.SIGINT)  # Ctrl-C: the whole tree stops, the record is kept
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    events = [protocol.decode(line) for line in rec_path.read_text().splitlines()]
    rec = record(events)
    steps = rec.complete_steps()
    assert rec.world_size == 2 and len(steps) >= 8, err
    # nothing lost: every step up to the last one both ranks finished, each in full (the
    # very last may have been cut by the Ctrl-C in the middle of its backward). A run that
    # outlived the attacks by a few thousand steps has its older steps emptied by the record's
    # bounded history (kinds/watched/history.py), each complete, in full and agreeing then.
    part = rec.parts[HISTORY]
    assert complete_count(rec) == steps[-1].step + 1, (part.emptied, [s.step for s in steps])
    assert part.emptied_full == part.emptied and part.emptied_differ == 0
    assert all(st.complete(2) and st.averaged_agree() for st in steps[:-1])
    summary = next(e for e in events if e.kind == "watch_summary")
    assert summary.refused == {
        "wrong token": 2,  # no token at all, and a wrong one
        "not JSON": 1,
        "oversized": 1,
        "no answer in time": 1,
    }, summary.refused
    assert summary.dropped == {"0": 0, "1": 0} and summary.bad_lines == 0


@pytest.mark.slow
def test_the_whole_budget_captures_every_step_of_the_first_ddp_model_only(tmp_path) -> None:
    """With ``--budget 1`` every step is captured in full. One watched run per process: the
    first DDP model; a second one's steps would carry the same step and rank numbers and mix
    with the first's. (One run for both: each torchrun costs the suite about ten seconds.)"""
    code, events, err = watch(tmp_path, *torchrun("--epochs", "1", "--second-model"), budget="1")
    assert code == 0, err
    assert "only the first one is watched" in err
    rec = record(events)
    assert rec.param_names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert [e.kind for e in events].count("watched_rank") == 2
    steps = rec.complete_steps()
    assert len(steps) == 4 and all(st.averaged_agree() and st.ranks_agree() for st in steps)
    assert all(set(st.averaged()) == set(rec.param_names) for st in steps)


ABORT_TAIL = """terminate called without an active exception
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
  exitcode  : -6 (pid: 9016)  (SIGABRT)
  traceback : Signal 6 (SIGABRT) received by PID 9016
"""


def test_only_torchs_teardown_abort_is_run_again_never_an_error_of_ours() -> None:
    torchrun_tb = '  File "/x/.venv/lib/python3.11/site-packages/torch/distributed/run.py"\n'
    assert teardown_abort_only("Traceback (most recent call last):\n" + torchrun_tb + ABORT_TAIL)
    ours = '  File "/x/src/ddp_viz/watch/capture.py", line 120, in hook\nKeyError: 3\n'
    assert not teardown_abort_only("Traceback (most recent call last):\n" + ours + ABORT_TAIL)
    assert not teardown_abort_only("exitcode  : 1 (pid: 9016)\nValueError: bad\n")
    assert not teardown_abort_only(ABORT_TAIL.replace("SIGABRT", "SIGSEGV"))
