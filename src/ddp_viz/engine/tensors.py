"""Torch tensors into the event stream's form (see :mod:`ddp_viz.model.tensors`)."""

from __future__ import annotations

import math
import zlib

import torch

from ddp_viz.model.tensors import SAMPLE, SUMMARY_ABOVE, Tensor


def encode(t: torch.Tensor, digest: bool = True) -> Tensor:
    """A flat list for small tensors; a summary (float64 statistics over every value, the
    first values and, with ``digest``, a CRC-32 of the bytes) for big ones, so no event line
    grows with the model.

    The digest answers "do the ranks hold bit-identical tensors?", which matters for averaged
    gradients and parameters; the ranks' local gradients differ by design, so they go without
    one. CRC-32 rather than a cryptographic hash: it only has to tell different bytes apart
    (a chance of 2^-32 to miss), and it is 4x faster, which counts for a 132 k-value model
    every step.
    """
    t = t.detach()
    if t.numel() <= SUMMARY_ABOVE:
        return t.flatten().tolist()
    flat = t.flatten()
    wide = flat.double()  # one conversion; the sums below run in float64 over every value
    low, high = torch.aminmax(flat)
    out: dict = {
        "shape": list(t.shape),
        "norm": math.sqrt(float(torch.dot(wide, wide))),
        "absmax": float(max(-low, high)),
        "mean": float(wide.sum()) / wide.numel(),
        "sample": flat[:SAMPLE].tolist(),
    }
    if digest:
        data = memoryview(flat.contiguous().numpy()).cast("B")
        out["digest"] = f"{zlib.crc32(data):08x}"
    return out
