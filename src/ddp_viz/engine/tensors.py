"""Torch tensors into the event stream's form (see :mod:`ddp_viz.model.tensors`)."""

from __future__ import annotations

import hashlib

import torch

from ddp_viz.model.tensors import SAMPLE, SUMMARY_ABOVE, Tensor


def encode(t: torch.Tensor) -> Tensor:
    """A flat list for small tensors; a summary (float64 statistics over every value, the
    first values, a digest of the bytes) for big ones, so no event line grows with the model."""
    t = t.detach()
    if t.numel() <= SUMMARY_ABOVE:
        return t.flatten().tolist()
    flat = t.flatten()
    wide = flat.double()
    return {
        "shape": list(t.shape),
        "norm": float(wide.norm()),
        "absmax": float(wide.abs().max()),
        "mean": float(wide.mean()),
        "sample": flat[:SAMPLE].tolist(),
        "digest": hashlib.blake2b(flat.contiguous().numpy().tobytes(), digest_size=8).hexdigest(),
    }
