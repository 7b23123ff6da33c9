"""Evaluating under DDP on real gloo ranks: dropout masks per seeding, four accuracies, and
rank 0 evaluating alone, through the wrapper (it hangs) and through ``model.module``.

Every rank trains a small classifier (Linear → BatchNorm1d → tanh → Dropout → Linear) with
DDP on a process group of its own whose timeout is the lesson's, once after
``torch.manual_seed(seed)`` (one step: its dropout masks) and once after
``torch.manual_seed(seed + rank)`` (the model the rest of the run evaluates). The held-out
rows are shared out by a real ``DistributedSampler``; every rank evaluates its share through
``model.module`` and all-reduces what the four ways need on the default group.

Then rank 0 evaluates alone through the DDP wrapper while the others wait in the script's
next collective, a barrier. The wrapper's forward first broadcasts rank 0's buffers, because
the forward before it (training, with gradients) synced (``require_forward_param_sync``;
``_pre_forward`` → ``_sync_buffers``): a collective no other rank calls, so both wait until
the group's timeout. A heartbeat thread says where each rank's main thread is blocked. Last,
rank 0 evaluates through ``model.module`` (no collective) on the default group and joins the
barrier: it completes.
"""

from __future__ import annotations

import copy
import zlib
from collections import OrderedDict
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DistributedSampler

from ddp_viz.engine.outbox import Outbox
from ddp_viz.kinds.evaluation.events import (
    DropoutMask,
    EvalNumbers,
    EvalOutcome,
    EvalReference,
    EvalShare,
    Seeding,
)
from ddp_viz.kinds.evaluation.spec import CLASSES, FEATURES, KIND, TRAIN_ROWS, EvalSpec
from ddp_viz.kinds.evaluation.waits import Heartbeat, LockedOutbox, timed
from ddp_viz.model.scenario import Scenario

THIS_FILE = "evaluation/engine.py"  # where a heartbeat's frames stop: the script's own line


def dataset(seed: int, rows: int, salt: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``rows`` rows of three overlapping clouds, one a class (the same centres for every
    ``salt``: training rows and held-out rows come from the same clouds)."""
    centres = torch.randn(CLASSES, FEATURES, generator=torch.Generator().manual_seed(seed)) * 1.2
    g = torch.Generator().manual_seed(seed * 7919 + salt)
    y = torch.randint(0, CLASSES, (rows,), generator=g)
    return centres[y] + torch.randn(rows, FEATURES, generator=g), y


def build_model(spec: EvalSpec) -> nn.Module:
    h = spec.hidden
    layers = [("inp", nn.Linear(FEATURES, h)), ("norm", nn.BatchNorm1d(h)), ("act", nn.Tanh())]
    layers += [("drop", nn.Dropout(spec.dropout)), ("out", nn.Linear(h, CLASSES))]
    return nn.Sequential(OrderedDict(layers))


def weights_crc(model: nn.Module) -> str:
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    return f"{zlib.crc32(flat.numpy().tobytes()):08x}"


def train(
    spec: EvalSpec, run: int, rank: int, group: Any, seeding: Seeding, steps: int, out: Any
) -> DDP:
    """``steps`` DDP steps after seeding as ``seeding`` says; the first step's dropout mask is
    read from the dropout layer's output (tanh before it is never exactly 0)."""
    world = dist.get_world_size()
    # listing: eval-train
    torch.manual_seed(spec.seed + (rank if seeding == "seed_plus_rank" else 0))
    model = build_model(spec)
    ddp = DDP(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=spec.lr)
    x, y = dataset(spec.seed, TRAIN_ROWS, 1)
    sampler = DistributedSampler(range(TRAIN_ROWS), world, rank, shuffle=True, seed=spec.seed)
    order = list(sampler)
    masks: list[torch.Tensor] = []
    hook = model.drop.register_forward_hook(lambda m, i, out: masks.append(out.ne(0).int()))
    for step in range(steps):
        rows = [order[(step * spec.batch + k) % len(order)] for k in range(spec.batch)]
        opt.zero_grad()
        F.cross_entropy(ddp(x[rows]), y[rows]).backward()
        opt.step()
        # end listing
        if step == 0:
            hook.remove()
            mask = masks[0].tolist()
            out.add(DropoutMask(run, rank, seeding, spec.seed, mask, weights_crc(model)))
    return ddp


def padding_places(rank: int, world: int, rows: int, count: int) -> list[bool]:
    """Which of a rank's ``count`` places hold a row the sampler added: it pads the list of
    rows at its end and gives rank r the places r, r + world, …, so place i is padding when
    ``r + i · world`` is past the last row."""
    # listing: eval-padding
    return [rank + i * world >= rows for i in range(count)]
    # end listing


def evaluate_shares(
    spec: EvalSpec, run: int, rank: int, model: nn.Module, data: tuple[Any, Any], out: Any
) -> None:
    """Every rank on its share, through ``model.module``; the all-reduces the four ways need."""
    world = dist.get_world_size()
    xe, ye = data
    n = len(ye)
    # listing: eval-shares
    sampler = DistributedSampler(range(n), world, rank, shuffle=spec.shuffle, seed=spec.seed)
    indices = list(sampler)
    padding = padding_places(rank, world, n, len(indices))
    model.eval()
    with torch.no_grad():
        correct = (model(xe[indices]).argmax(1) == ye[indices]).tolist()
    kept = [c for c, pad in zip(correct, padding, strict=True) if not pad]
    right, right_kept = float(sum(correct)), float(sum(kept))
    accuracy = torch.tensor([right_kept / len(kept)], dtype=torch.float64)
    dist.all_reduce(accuracy)
    sums = torch.tensor([right, len(correct), right_kept, len(kept)], dtype=torch.float64)
    dist.all_reduce(sums)
    # end listing
    s = sums.tolist()
    out.add(EvalShare(run, rank, indices, padding, correct))
    out.add(
        EvalNumbers(
            run,
            rank,
            [right, float(len(correct))],
            [right_kept, float(len(kept))],
            float(accuracy) / world,
            s[:2],
            s[2:],
        ),
        now=True,
    )


def reference(run: int, model: nn.Module, data: tuple[Any, Any]) -> EvalReference:
    """The trained model copied to float64 and evaluated on every held-out row at once."""
    xe, ye = data
    solo = copy.deepcopy(model).double().eval()
    with torch.no_grad():
        correct = (solo(xe.double()).argmax(1) == ye).tolist()
    state = {k: [float(v) for v in t.flatten().tolist()] for k, t in model.state_dict().items()}
    return EvalReference(run, xe.tolist(), ye.tolist(), state, correct, len(correct))


def rank0_through_wrapper(
    run: int, rank: int, ddp: DDP, group: Any, xe: torch.Tensor, out: LockedOutbox
) -> None:
    """Rank 0 evaluates alone through the wrapper; every rank then calls the barrier."""

    def attempt() -> None:
        # listing: eval-wrapper
        if rank == 0:
            ddp.eval()
            with torch.no_grad():
                ddp(xe)
        dist.barrier(group=group)
        # end listing

    with Heartbeat(run, rank, "wrapper", out, stop=THIS_FILE):
        seconds, error = timed(attempt)
    what = "forward through DDP" if rank == 0 else "barrier"
    out.add(EvalOutcome(run, rank, "wrapper", what, seconds, error), now=True)


def rank0_through_module(
    run: int, rank: int, model: nn.Module, data: tuple[Any, Any], out: LockedOutbox
) -> None:
    """Rank 0 evaluates every held-out row through ``model.module``; then the barrier."""
    xe, ye = data
    accuracy = [-1.0]

    def attempt() -> None:
        # listing: eval-module
        if rank == 0:
            model.eval()
            with torch.no_grad():
                right = (model(xe).argmax(1) == ye).sum().item()
            accuracy[0] = right / len(ye)
        dist.barrier()
        # end listing

    with Heartbeat(run, rank, "module", out, stop=THIS_FILE):
        seconds, error = timed(attempt)
    what = "model.module forward" if rank == 0 else "barrier"
    out.add(EvalOutcome(run, rank, "module", what, seconds, error, accuracy[0]), now=True)


def run_evaluation(run: int, rank: int, scenario: Scenario, outbox: Outbox) -> int:
    """The lesson's run; returns its one step."""
    spec = scenario.table(KIND)
    assert isinstance(spec, EvalSpec)
    out = LockedOutbox(outbox)
    # the lesson's timeout: the hang ends while the learner watches (the default group keeps
    # the engine's, for the all-reduces of the evaluation)
    group = dist.new_group(backend="gloo", timeout=timedelta(seconds=spec.timeout_s))
    same = train(spec, run, rank, group, "same", 1, out)
    del same  # its masks are all it was for
    ddp = train(spec, run, rank, group, "seed_plus_rank", spec.train_steps, out)
    data = dataset(spec.seed, spec.eval_rows, 2)
    evaluate_shares(spec, run, rank, ddp.module, data, out)
    if rank == 0:
        out.add(reference(run, ddp.module, data), now=True)
    if spec.hang:
        rank0_through_wrapper(run, rank, ddp, group, data[0], out)
    rank0_through_module(run, rank, ddp.module, data, out)
    del ddp  # DDP goes while its group is still registered (see Trainer.release)
    out.flush()
    return 1


PROGRAM = run_evaluation
