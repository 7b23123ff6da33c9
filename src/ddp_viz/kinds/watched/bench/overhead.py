"""What watching costs a user's training, against its peer: the same torchrun script, plain,
under ``ddp-viz watch``, under ``torch.profiler`` (what a practitioner reaches for otherwise),
with a listener that is gone, and registering PyTorch's own Python ``allreduce_hook`` itself
(what any Python comm hook costs it, before a watch does anything). Each run times its own
steps from inside the script (the median after a warm-up), so all are measured the same way.

Each round runs the arms back to back, a different one first each round. The figures are the
medians of the rounds' ratios to plain. Which cores a launch's two ranks land on moves one run's
step time by 10% or more on a shared two-core machine, so one round says little: the
"listener gone" arm, which adds nothing to a step, is the check on how far apart two identical
arms come out. ``smoke`` runs plain, watched and profiler once each on a tiny step: it checks
the bench runs and reports its fields (a test's), and measures nothing worth reading."""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from ddp_viz.bench.stats import rotated
from ddp_viz.kinds.watched.watch.command import watched_env

SCRIPT = Path(__file__).with_name("watched_train.py")
BIN = Path(sys.executable).parent
# How a rank of a torchrun run now and then dies at exit, after its script has finished, with
# or without ddp-viz in it (SIGABRT: a C++ thread destroyed while joinable, in torch's
# teardown). Seen in plain runs, watched runs, runs whose listener was gone and runs with the
# script's own Python comm hook: 1 in 36 runs in one loop here, 0 in 52 in others. Any other
# failure stops the bench.
TEARDOWN_ABORT = "terminate called without an active exception"
RETRIES: list[str] = []  # runs that ended in the teardown abort, for the figures to count


def teardown_abort_only(stderr: str) -> bool:
    """Whether a failed torchrun run ended in torch's teardown abort and nothing of ours: the
    abort's words, torchrun naming a SIGABRT, and no traceback through ddp-viz's code (an
    error in the capture would show one, and must never be retried away)."""
    frames = [ln for ln in stderr.splitlines() if ln.lstrip().startswith('File "')]
    ours = any("ddp_viz" in ln for ln in frames)
    return TEARDOWN_ABORT in stderr and "(SIGABRT)" in stderr and not ours


# rounds per case, times the bench's count: a buckets-MLP run takes seconds and its ratio is
# the one near its bound, so it gets more rounds to narrow the median
ROUNDS_TIMES = {"mlp": 3}
# key, what, the MLP's hidden widths, steps; the 10 M case's step is the one of 20 ms or more
# (about 100 ms here) where the profiler is the peer
CASES = (
    ("mlp", "buckets MLP (132 k)", "256,256,256", 200),
    ("10m", "10 M-parameter MLP", "2236,2236,2236", 30),
)
SMOKE = (("smoke", "tiny MLP", "16", 3),)
# each case's arms besides plain, and their figures' prefixes
ARMS = {
    "mlp": ("watched", "gone", "hook"),
    "10m": ("watched", "gone", "hook", "profiler"),
    "smoke": ("watched", "profiler"),
}
PREFIX = {"watched": "watch", "gone": "watch_gone", "hook": "watch_hook"}
PREFIX["profiler"] = "watch_profiler"


def _step_s(prefix: list[str], hidden: str, steps: int, env: dict[str, str], *extra: str) -> float:
    torchrun = [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2"]
    cmd = [*prefix, *torchrun, str(SCRIPT), hidden, str(steps), *extra]
    for _ in range(3):
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
        if done.returncode == 0 or not teardown_abort_only(done.stderr):
            break
        # Rank 0 prints its figure after the last timed step; an abort in the teardown after
        # that leaves the figure whole. Without a figure, the run is run again (twice at most).
        RETRIES.append(" ".join(cmd))
        if lines:
            return _figure(lines[-1], extra)
    if not lines or done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])}…: exit {done.returncode}: {done.stderr[-400:]}")
    return _figure(lines[-1], extra)


def _figure(line: str, extra: tuple[str, ...]) -> float:
    figure = json.loads(line)
    if "python-hook" in extra and figure["comm_hook"] != "allreduce_hook":
        raise RuntimeError(f"the python-hook arm ran with comm hook {figure['comm_hook']!r}")
    if figure.get("profiled") != ("profiler" in extra):
        raise RuntimeError(f"the script's profiler was {figure.get('profiled')}, not as asked")
    return float(figure["median_s"])


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def watch_overhead(reps: int, smoke: bool = False) -> dict[str, Any]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    gone = dict(watched_env(f"127.0.0.1:{_closed_port()}", "no-listener"), OMP_NUM_THREADS="1")
    watch = [str(BIN / "ddp-viz"), "watch", "--no-window", "--"]
    # each arm: the command's prefix, its environment, the script's extra arguments
    every: dict[str, tuple[list[str], dict[str, str], tuple[str, ...]]] = {
        "plain": ([], env, ()),
        "watched": (watch, env, ()),
        "gone": ([], gone, ()),
        "hook": ([], env, ("python-hook",)),
        "profiler": ([], env, ("profiler",)),
    }
    fig: dict[str, Any] = {}
    for key, _, hidden, steps in SMOKE if smoke else CASES:
        names = ["plain", *ARMS[key]]
        got: dict[str, list[float]] = {name: [] for name in names}
        rounds = 1 if smoke else reps * ROUNDS_TIMES.get(key, 1)
        for i in range(rounds):  # interleaved, side by side
            for name in rotated(names, i):
                prefix, arm_env, extra = every[name]
                got[name].append(_step_s(prefix, hidden, steps, arm_env, *extra))
        plain = got["plain"]
        for name in ARMS[key]:
            prefix = PREFIX[name]
            fig[f"{prefix}_{key}_ms"] = statistics.median(got[name]) * 1e3
            fig[f"{prefix}_ratio_{key}"] = statistics.median(
                x / y for x, y in zip(got[name], plain, strict=True)
            )
        fig[f"watch_plain_{key}_ms"] = statistics.median(plain) * 1e3
        if "profiler" in got:  # watched against its peer, round by round
            fig[f"watch_over_profiler_{key}"] = statistics.median(
                x / y for x, y in zip(got["watched"], got["profiler"], strict=True)
            )
        fig[f"watch_rounds_{key}"] = rounds
    fig["watch_retries"] = len(RETRIES)  # runs that ended in torch's teardown abort
    return fig
