"""Inside a watched rank: the doctor's two checks on the training's own tensors.

- **Non-finite values.** The scalar the script calls ``backward`` on (its loss) is read every
  step (one ``item()``, about a microsecond). A bucket's local gradient is summed before its
  all-reduce (one reduction, no copy: a NaN or an infinity anywhere makes the sum non-finite)
  on the steps captured in full, which copy it anyway and are budgeted, and on a step whose
  loss was not finite, to name the tensors. Summing every bucket of every step would cost a
  25 MB bucket about 4 ms a step here. A NaN gradient under a finite loss is therefore found at
  the next step captured in full, or at the next step's loss, which it poisons through the
  optimizer. The first finding stops the checking: after that, nothing.
- **Digests.** On the steps captured in full, every parameter and buffer is copied as the
  module's forward begins (after DDP's buffer broadcast); the sender's thread turns the copies
  into CRC-32s of their bytes (:class:`~ddp_viz.kinds.watched.events.WatchDigests`), which the
  listener's side compares across ranks.
"""

from __future__ import annotations

import contextlib
import math
import zlib
from typing import Any

import torch

from ddp_viz.kinds.watched.events import WatchDigests, WatchNonFinite

RUN = 1


class NonFinite:
    """The first step at which this rank's loss or a local gradient was not finite."""

    def __init__(self) -> None:
        self.checking = True  # until the first non-finite value
        self.loss: float | None = None
        self.tensors: list[str] = []

    def wants_buckets(self, full: bool) -> bool:
        """Whether this step's buckets are checked: captured in full, or after a bad loss."""
        return self.checking and (full or self.loss is not None)

    def bucket(self, buffer: torch.Tensor, params: list, names: list[str]) -> None:
        """A bucket's local gradient, before its all-reduce (the comm hook's thread)."""
        if math.isfinite(buffer.sum().item()):
            return
        offset = 0
        for p, name in zip(params, names, strict=True):
            n = p.numel()
            if not bool(torch.isfinite(buffer[offset : offset + n]).all()):
                self.tensors.append(name)
            offset += n

    def backward_of(self, tensor: torch.Tensor) -> None:
        """The script called ``backward`` on ``tensor``: a scalar is its loss."""
        if tensor.numel() == 1:
            value = float(tensor.detach().item())
            if not math.isfinite(value):
                self.loss = value

    def found(self, step: int, rank: int) -> WatchNonFinite | None:
        """At the step's end: the event, the first time only (then checking stops)."""
        if not self.checking or (self.loss is None and not self.tensors):
            return None
        self.checking = False
        return WatchNonFinite(RUN, step, rank, self.loss, sorted(set(self.tensors)))


def snapshot(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Copies of every parameter and buffer (the forward is about to change the buffers)."""
    out = {n: p.detach().clone() for n, p in module.named_parameters()}
    out.update((n, b.detach().clone()) for n, b in module.named_buffers())
    return out


def digest(t: torch.Tensor) -> str:
    raw = t.contiguous().view(-1).view(torch.uint8).numpy()
    return f"{zlib.crc32(raw):08x}"


def digests_event(step: int, rank: int, copies: dict[str, torch.Tensor]) -> WatchDigests:
    return WatchDigests(RUN, step, rank, {n: digest(t) for n, t in copies.items()})


_WATCHING: dict[str, Any] = {"checks": None}  # the process's watched DDP's checks


def patch_backward() -> None:
    """Wrap ``torch.Tensor.backward`` so the first non-finite loss is seen (once per process;
    a few microseconds per call, nothing once a value was found or without a watch)."""
    run = torch.Tensor.backward
    if getattr(run, "_ddp_viz_wrapped", False):
        return

    def backward(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        checks = _WATCHING["checks"]
        if checks is not None and checks.checking:
            with contextlib.suppress(Exception):  # never into the script
                checks.backward_of(self)
        return run(self, *args, **kwargs)

    backward._ddp_viz_wrapped = True  # type: ignore[attr-defined]
    torch.Tensor.backward = backward  # type: ignore[method-assign]


def watching(checks: NonFinite) -> None:
    _WATCHING["checks"] = checks
