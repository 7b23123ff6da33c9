"""The watch doctor on real torchrun runs of a script that goes wrong on purpose
(``tests/data/watched/doctor.py``, which knows nothing of ddp-viz), under ``watch --no-window``:
the report names the hang (which collective each rank is in, issued where, who is missing,
what does not match, each rank's stack), the first NaN, the first desync and the straggler.
(A killed rank and collectives that do not match: ``test_watch_faults.py``.) Each runs in
about 10 s: a process group timeout of 4 s ends the hung ones, and ``--hang-after 1`` names
the hang well before that."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddp_viz.kinds.watched.checks import doctoring
from ddp_viz.model import protocol
from ddp_viz.model.timeline import record

pytestmark = [pytest.mark.gloo, pytest.mark.slow]

SCRIPT = Path(__file__).parent.parent / "data" / "watched" / "doctor.py"
BIN = Path(sys.executable).parent


def line_of(code: str) -> int:
    """The script's one line that holds ``code`` (the call sites the report must name)."""
    found = [i for i, t in enumerate(SCRIPT.read_text().splitlines(), 1) if t.strip() == code]
    assert len(found) == 1, (code, found)
    return found[0]


def site(code: str) -> str:
    return f"doctor.py:{line_of(code)} in main"


def doctor(tmp_path: Path, case: str, *args: str, budget: str = "1") -> tuple[int, list, str]:
    rec = tmp_path / "watched.jsonl"
    cmd = [str(BIN / "ddp-viz"), "watch", "--record", str(rec), "--no-window"]
    cmd += ["--budget", budget, "--hang-after", "1", "--"]
    cmd += [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2", str(SCRIPT), case]
    cmd += ["--timeout", "4", *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=90, env=env)
    events = [protocol.decode(line) for line in rec.read_text().splitlines()]
    # the recording ends cleanly whatever the run did: the summary, then the run's end
    assert [e.kind for e in events[-2:]] == ["watch_summary", "run_finished"], done.stderr
    assert events[-2].exit_code == done.returncode
    return done.returncode, events, report(done.stderr)


def report(stderr: str) -> str:
    """What ``watch`` printed, without the ranks' and torchrun's own lines."""
    at = stderr.index("ddp-viz: the command exited")
    return stderr[at:]


def test_a_rank_with_one_batch_more_hangs_in_ddps_all_reduce(tmp_path) -> None:
    code, _, said = doctor(tmp_path, "extra-batch", "--steps", "4")
    assert code == 1
    backward = site("loss.backward()")
    # rank 0's fifth step all-reduces its gradients; rank 1 is done and waits at the end
    assert (
        f"rank 0: inside DDP's gradient all_reduce #5 [65] (bucket 0 of step 5) at {backward}"
        in said
    )
    end = site("dist.barrier()  # every rank done before the process group goes, as scripts do")
    assert f"rank 1: inside barrier #5 at {end}" in said
    assert "✗ the ranks' collectives do not match" in said
    # and what it means: rank 0 began a step rank 1 never will, or rank 1's barrier is one
    # the others never make (seen in a barrier, rank 1 may be inside its loop or past it)
    assert (
        "✗ uneven inputs, or a collective only one rank makes: rank 0 entered step 5 while "
        f"rank 1, after 4 steps, waits in barrier #5 at {end}"
    ) in said
    last = said.rstrip().splitlines()[-1]
    assert last.startswith("ddp-viz verdict: uneven inputs, or a collective only rank 1 makes: ")
    assert "rank 0 entered step 5 while rank 1, after 4 steps, waits in barrier #5" in last


def test_a_rank_asleep_outside_any_collective_is_named_by_its_stack(tmp_path) -> None:
    code, _, said = doctor(tmp_path, "sleep")
    assert code == 1
    sleep = site("time.sleep(60)")
    assert (
        f"rank 1: in no communication, in or after its step 3 (2 reported); running {sleep}: "
        "time.sleep(60)"
    ) in said
    assert "rank 0: inside DDP's gradient all_reduce #4 [65] (bucket 0 of step 4)" in said
    assert "missing from all_reduce #4: rank 1" in said


def test_the_first_nan_is_named_with_its_rank_step_and_tensors(tmp_path) -> None:
    code, events, said = doctor(tmp_path, "nan", budget="0.02")  # its loss names the step
    assert code == 0
    found = doctoring(record(events)).non_finite
    first = min(found, key=lambda e: (e.step, e.rank))
    assert (first.step, first.rank) == (3, 1) and first.loss != first.loss  # NaN
    assert first.tensors == ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert (
        "✗ non-finite: at step 4 on rank 1 (the first), its loss was nan; its local gradient "
        "was not finite in 0.bias, 0.weight, 2.bias, 2.weight"
    ) in said


def test_a_rank_that_is_slow_every_step_is_the_straggler(tmp_path) -> None:
    code, _, said = doctor(tmp_path, "slow", "--steps", "12", budget="0.02")
    assert code == 0
    verdict = next(line for line in said.splitlines() if "straggler" in line)
    assert verdict.startswith("  ✗ straggler: rank 1 was the last to reach the all-reduce in ")
    waited = float(verdict.split("the others waited ")[1].split(" ms")[0])
    assert waited >= 20  # it sleeps 30 ms a step before its forward


def test_a_parameter_changed_on_one_rank_is_the_desync_named(tmp_path) -> None:
    code, events, said = doctor(tmp_path, "param")
    assert code == 0
    desync = doctoring(record(events)).desync
    assert desync is not None and (desync.step, desync.agreed) == (4, 3)
    assert desync.tensors == {"0.bias": [1]}
    assert (
        "✗ desync: entering step 5 (after step 4), rank 1 held other bytes than rank 0 in "
        "0.bias; identical entering step 4"
    ) in said


def test_batchnorm_buffers_not_broadcast_are_the_desync_named(tmp_path) -> None:
    code, events, said = doctor(tmp_path, "bn")
    assert code == 0
    desync = doctoring(record(events)).desync
    assert desync is not None and (desync.step, desync.agreed) == (1, 0)
    assert sorted(desync.tensors) == ["1.running_mean", "1.running_var"]
    assert "✗ desync: entering step 2 (after step 1), rank 1 held other bytes" in said


def test_a_rank_dependent_code_path_is_the_desync_named(tmp_path) -> None:
    # rank 0 steps its learning-rate schedule in its logging branch alone (after step 4's
    # update, 0-based 3): step 5's update then moves every parameter by another amount there
    code, events, said = doctor(tmp_path, "branch")
    assert code == 0
    desync = doctoring(record(events)).desync
    assert desync is not None and (desync.step, desync.agreed) == (5, 4)
    assert desync.tensors == {n: [1] for n in ("0.bias", "0.weight", "2.bias", "2.weight")}
    assert (
        "✗ desync: entering step 6 (after step 5), rank 1 held other bytes than rank 0 in "
        "0.bias, 0.weight, 2.bias, 2.weight; identical entering step 5"
    ) in said
