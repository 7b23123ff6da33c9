"""Frameworks' own DDP, watched unchanged: a PyTorch Lightning ``Trainer(strategy="ddp",
accelerator="cpu", devices=2)`` that launches its own second rank, and a Hugging Face
Accelerate loop under torchrun. Every step is captured (``--budget 1``); on each, every rank
holds the same average and it is the mean of the ranks' local gradients. Skipped without the
packages: ``pip install -c constraints.txt -e '.[frameworks]'``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from ddp_viz.model.tensors import tensor_sample
from ddp_viz.model.timeline import record
from tests.watch.test_watch import watch

pytestmark = [pytest.mark.gloo, pytest.mark.slow]

DATA = Path(__file__).parents[1] / "data" / "watched"
BIN = Path(sys.executable).parent


def needs(package: str) -> pytest.MarkDecorator:
    missing = importlib.util.find_spec(package) is None
    why = f"{package} is not installed (the 'frameworks' extra: pip install -e '.[frameworks]')"
    return pytest.mark.skipif(missing, reason=why)


def averaged_is_the_mean_of_locals(events: list, steps: int) -> None:
    rec = record(events)
    assert rec.world_size == 2
    full = [st for st in rec.steps if st.complete(2)]
    assert len(full) == steps  # --budget 1: every step in full
    for st in full:
        assert st.averaged_agree()
        for name, values in st.averaged().items():
            locals_ = [tensor_sample(rs.local[name]) for rs in st.ranks.values()]
            want = [sum(v) / len(v) for v in zip(*locals_, strict=True)]
            assert tensor_sample(values) == pytest.approx(want, abs=1e-7), (st.step, name)
            assert tensor_sample(values) != pytest.approx(locals_[0], abs=1e-9), "not averaged"


def no_diagnosis(err: str) -> None:
    """A clean run of a framework's script: the doctor finds nothing (issue 45, 7)."""
    report = err[err.index("ddp-viz: the command exited") :]
    assert "✗" not in report, report
    assert report.rstrip().splitlines()[-1].startswith("ddp-viz verdict: ✓"), report


@needs("lightning")
def test_a_lightning_trainer_launching_its_own_ranks_is_watched(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    cmd = [sys.executable, str(DATA / "lightning_train.py"), "--steps", "3"]
    code, events, err = watch(tmp_path, *cmd, budget="1")
    assert code == 0, err
    averaged_is_the_mean_of_locals(events, 3)
    no_diagnosis(err)


@needs("accelerate")
def test_an_accelerate_loop_under_torchrun_is_watched(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    script = DATA / "accelerate_train.py"
    cmd = [str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2", str(script)]
    code, events, err = watch(tmp_path, *cmd, "--steps", "3", budget="1")
    assert code == 0, err
    averaged_is_the_mean_of_locals(events, 3)
    no_diagnosis(err)
