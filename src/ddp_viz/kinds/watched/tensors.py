"""A collective's tensors, in words and as what the ranks' calls must agree on (pure).

gloo moves bytes: a rank whose tensor has another shape or another dtype than its peers'
sends or expects another number of bytes, and gloo aborts the rank that receives more than it
expected ("Received data size doesn't match"), or the ranks wait. So the shapes and the dtypes
are both part of a call that must match. A rank sends its tensors' dtypes only when one is not
float32 (torch's default dtype); a call without them is float32, or from a recording made
before dtypes were sent.
"""

from __future__ import annotations

from ddp_viz.kinds.watched.events import CommCall

DEFAULT_DTYPE = "float32"


def tensor_words(c: CommCall) -> str:
    """``[3] [4×2]``: each tensor's shape, followed by its dtype when that is not float32
    (``[] float64``); "" for a call of no tensor. (A list of many tensors ends with its length,
    ``[64]``, which has no dtype.)"""
    dtypes = c.get("dtypes", [])
    parts = []
    for i, size in enumerate(c.get("sizes", [])):
        shape = "[" + "×".join(map(str, size)) + "]"
        dtype = dtypes[i] if i < len(dtypes) else DEFAULT_DTYPE
        parts.append(shape if dtype == DEFAULT_DTYPE else f"{shape} {dtype}")
    return " ".join(parts)


def tensors_key(c: CommCall) -> tuple:
    """What the ranks' calls must agree on of their tensors: each one's shape and dtype."""
    sizes = [tuple(s) for s in c.get("sizes", [])]
    dtypes = c.get("dtypes", [])
    return tuple((s, dtypes[i] if i < len(dtypes) else DEFAULT_DTYPE) for i, s in enumerate(sizes))
