"""Torch tensors into the event stream's form (see :mod:`ddp_viz.model.tensors`)."""

from __future__ import annotations

import math
import threading
import zlib
from collections.abc import Mapping

import numpy as np
import torch

from ddp_viz.model.tensors import SAMPLE, SUMMARY_ABOVE, Tensor

# numpy holds the values of these dtypes bit for bit; others (bfloat16) take torch's path
_NUMPY_DTYPES = {torch.float32, torch.float64, torch.float16}


class _Wide:
    """A float64 buffer reused for the summaries a thread makes, one per thread.

    A summary widens its tensors to float64 first. Reusing one buffer instead of a fresh array
    per tensor and step took a quarter to a third off the buckets lesson's summaries. Per
    thread, because numpy lets go of the GIL while it copies and sums (ranks encode on their
    main thread, a watched script on its sender's). Never more than ``KEEP_UP_TO`` values are
    kept: a bigger tensor is widened into a temporary, so a watched script's 200 M-value
    embedding never leaves 1.6 GB held in its process.
    """

    KEEP_UP_TO = 1 << 22  # 4 M values: 32 MB at most, per thread

    def __init__(self) -> None:
        self._local = threading.local()

    def take(self, size: int) -> np.ndarray:
        """``size`` float64 values to write into, valid until this thread's next call."""
        if size > self.KEEP_UP_TO:
            return np.empty(size, dtype=np.float64)
        buf = getattr(self._local, "buf", None)
        if buf is None or buf.size < size:
            buf = self._local.buf = np.empty(size, dtype=np.float64)
        return buf[:size]


_WIDE = _Wide()


def encode(t: torch.Tensor, digest: bool = True) -> Tensor:
    """One tensor in the events' form: see :func:`encode_all`."""
    return encode_all({"": t}, digest)[""]


def encode_all(tensors: Mapping[str, torch.Tensor], digest: bool = True) -> dict[str, Tensor]:
    """Every tensor of one event in the events' form, by name: a flat list for small tensors; a
    summary (float64 statistics over every value, the first values and, with ``digest``, a
    CRC-32 of the bytes) for big ones, so no event line grows with the model.

    The digest answers "do the ranks hold bit-identical tensors?", which matters for averaged
    gradients and parameters; the ranks' local gradients differ by design, so they go without
    one. CRC-32 rather than a cryptographic hash: it only has to tell different bytes apart
    (a chance of 2^-32 to miss), and it is 4x faster, which counts for a 132 k-value model
    every step.

    The big tensors' statistics are taken together: their values are laid end to end in one
    float64 buffer and each statistic is one numpy call over all of them (``reduceat``), where a
    numpy call per statistic and tensor cost more in calls than in arithmetic (the buckets
    lesson's three events a step: about 40% less time).
    """
    out: dict[str, Tensor] = {}
    group: list[tuple[str, torch.Tensor, np.ndarray]] = []
    size = 0
    for name, t in tensors.items():
        t = t.detach()
        if t.numel() <= SUMMARY_ABOVE:
            out[name] = t.flatten().tolist()
        elif t.dtype not in _NUMPY_DTYPES or t.device.type != "cpu":
            out[name] = _summary_torch(t, digest)
        else:
            values = t.contiguous().view(-1).numpy()
            if group and size + values.size > _WIDE.KEEP_UP_TO:  # keep within the kept buffer
                out.update(_summaries(group, size, digest))
                group, size = [], 0
            group.append((name, t, values))
            size += values.size
            out[name] = {}  # keeps the caller's order; filled in below
    if group:
        out.update(_summaries(group, size, digest))
    return out


def _summaries(
    group: list[tuple[str, torch.Tensor, np.ndarray]], size: int, digest: bool
) -> dict[str, dict]:
    wide = _WIDE.take(size)
    starts = np.empty(len(group), dtype=np.intp)
    at = 0
    for i, (_, _, values) in enumerate(group):
        starts[i] = at
        wide[at : at + values.size] = values
        at += values.size
    sums = np.add.reduceat(wide, starts).tolist()
    highs = np.maximum.reduceat(wide, starts).tolist()
    lows = np.minimum.reduceat(wide, starts).tolist()
    np.multiply(wide, wide, out=wide)
    squares = np.add.reduceat(wide, starts).tolist()
    out: dict[str, dict] = {}
    for i, (name, t, values) in enumerate(group):
        summary: dict = {
            "shape": list(t.shape),
            "norm": math.sqrt(squares[i]),
            "absmax": max(-lows[i], highs[i]),
            "mean": sums[i] / values.size,
            "sample": values[:SAMPLE].tolist(),
        }
        if digest:
            summary["digest"] = f"{zlib.crc32(values):08x}"
        out[name] = summary
    return out


def _summary_torch(t: torch.Tensor, digest: bool) -> dict:
    flat = t.flatten().cpu()
    wide = flat.double()
    low, high = torch.aminmax(flat)
    out: dict = {
        "shape": list(t.shape),
        "norm": math.sqrt(float(torch.dot(wide, wide))),
        "absmax": float(max(-low, high)),
        "mean": float(wide.sum()) / wide.numel(),
        "sample": flat[:SAMPLE].tolist(),
    }
    if digest:
        data = memoryview(flat.contiguous().view(torch.uint8).numpy())
        out["digest"] = f"{zlib.crc32(data):08x}"
    return out
