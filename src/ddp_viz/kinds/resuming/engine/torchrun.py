"""Part two, from rank 0 of the lesson's ranks: the same training under ``torchrun
--max-restarts``, with the last rank killed once; then the workers' logs read back.

torchrun runs in a folder of the run's own private folder, which the engine removes when the
run ends however it ends; rank 0 removes the checkpoint files when torchrun is done (and says
how many were left). If the rank is stopped while torchrun runs, torchrun is told to stop
(:mod:`.agent`) and its workers die with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ddp_viz.kinds.resuming.engine.training import Training, weights_crc
from ddp_viz.kinds.resuming.events import RestartAttempt, RestartOutcome
from ddp_viz.kinds.resuming.spec import RestartSpec
from ddp_viz.platform import request_stacks

TIMEOUT_S = 300.0  # a run that takes longer than this is stuck: torchrun is stopped
STACKS_S = 1.0  # what a stuck worker is given to print its stacks


def command(spec: RestartSpec, world: int, folder: Path) -> list[str]:
    # listing: restart-torchrun
    args = [
        "--standalone",
        "--nproc-per-node",
        str(world),
        "--max-restarts",
        str(spec.max_restarts),
        "--monitor-interval",
        "0.1",
    ]
    # end listing
    worker = ["-m", "ddp_viz.kinds.resuming.engine.worker", str(folder)]
    return [sys.executable, "-m", "ddp_viz.kinds.resuming.engine.agent", *args, *worker,
            json.dumps(spec.to_dict())]  # fmt: skip


@dataclass
class Attempts:
    """What the workers logged: per (attempt, rank) its lines."""

    lines: dict[tuple[int, int], list[dict]] = field(default_factory=dict)

    @classmethod
    def read(cls, folder: Path) -> Attempts:
        out = cls()
        for f in sorted(folder.glob("log-*-*.jsonl")):
            _, attempt, rank = f.stem.split("-")
            with f.open() as src:
                rows = [json.loads(line) for line in src if line.strip()]
            out.lines[(int(attempt), int(rank))] = rows
        return out

    def event(self, run: int, attempt: int, rank: int) -> RestartAttempt:
        rows = self.lines[(attempt, rank)]
        whats = {r["what"] for r in rows}
        end = next((w for w in ("finished", "killed") if w in whats), "")
        error = next((r["error"] for r in rows if r["what"] == "error"), "")
        return RestartAttempt(
            run=run,
            rank=rank,
            attempt=attempt,
            pid=next((r["pid"] for r in rows if r["what"] == "start"), 0),
            store_port=next((r["port"] for r in rows if r["what"] == "start"), 0),
            start_step=next((r["step"] for r in rows if r["what"] == "resumed"), -1),
            last_step=max((r["step"] for r in rows if r["what"] == "step"), default=-1),
            saved=[r["step"] for r in rows if r["what"] == "saved"],
            end=end or ("failed" if error else "stopped"),  # type: ignore[arg-type]
            error=error,
        )


def launch(
    spec: RestartSpec, world: int, folder: Path, timeout: float = TIMEOUT_S
) -> tuple[int, float]:
    """Run torchrun in ``folder`` (made here) until it ends: its exit code and seconds. One
    that takes longer than ``timeout`` is stuck: its workers print their stacks to
    ``torchrun.log`` (where each one waits), then torchrun is told to stop."""
    folder.mkdir()
    # torchrun's own temporary folders (its logs) go in ours too: it leaves them behind
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "TMPDIR": str(folder),
        "DDP_VIZ_AGENT_PARENT": str(os.getpid()),
    }
    started = time.perf_counter()
    with open(folder / "torchrun.log", "w") as log:
        proc = subprocess.Popen(command(spec, world, folder), env=env, stdout=log, stderr=log)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            if request_stacks(proc.pid):
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(STACKS_S)  # faulthandler writes from the signal handler
            log.write(f"ddp-viz: torchrun stopped after {timeout:g} s: stuck\n")
            log.flush()
            proc.terminate()
            code = proc.wait()
    return code, time.perf_counter() - started


def run_torchrun(spec: RestartSpec, run: int, world: int, base: Training, folder: Path) -> list:
    """Start torchrun, wait for it, and turn what its workers logged into events."""
    code, seconds = launch(spec, world, folder)
    found = Attempts.read(folder)
    events: list = [found.event(run, a, r) for a, r in sorted(found.lines)]
    final = folder / "final.pt"
    diff, crc = -1.0, ""  # no final weights: the run did not finish
    if final.exists():
        params = torch.load(final, map_location="cpu")
        mine = list(base.model.parameters())
        diff = max(float((p - q.detach()).abs().max()) for p, q in zip(params, mine, strict=True))
        crc = crc_of(params)
    said = (folder / "torchrun.log").read_text(errors="replace")
    sigterms = len(re.findall(r"closing signal SIGTERM", said))
    weights = (diff, crc, weights_crc(base.model))
    events.append(outcome(spec, (run, sigterms, code), events, weights, seconds, folder))
    return events


def crc_of(params: list[torch.Tensor]) -> str:
    model = torch.nn.ParameterList([torch.nn.Parameter(p) for p in params])
    return weights_crc(model)


def outcome(
    spec: RestartSpec,
    ids: tuple[int, int, int],
    attempts: list[RestartAttempt],
    weights: tuple[float, str, str],
    seconds: float,
    folder: Path,
) -> RestartOutcome:
    run, sigterms, code = ids  # sigterms: torchrun's "Sending process … closing signal SIGTERM"
    last = max((a.attempt for a in attempts), default=0)
    resumed = [a.start_step for a in attempts if a.attempt == last and a.start_step >= 0]
    mesh = {a.attempt for a in attempts if "connectFullMesh" in a.error or "refused" in a.error}
    killed = [a for a in attempts if a.end == "killed"]
    torn = len(list(folder.glob("*.tmp")))  # a checkpoint half written when a rank died
    shutil.rmtree(folder, ignore_errors=True)
    return RestartOutcome(
        run=run,
        rank=0,
        exit_code=code,
        restarts=last,
        max_restarts=spec.max_restarts,
        interval=spec.interval,
        killed_rank=killed[0].rank if killed else -1,
        killed_after=killed[0].last_step if killed else -1,
        resumed_from=min(resumed, default=-1),
        mesh_failures=len(mesh),
        max_diff=weights[0],
        weights=weights[1],
        weights_want=weights[2],
        seconds=seconds,
        left_behind=torn,
        sigterms=sigterms,
    )
