"""JSON text to Python values, at C speed where it can be.

A run of a 198-tensor model at 8 ranks streams some 14 MB of JSON lines in 20 steps (each
rank's gradients and parameters at the steps captured in full); the standard library's
``json.loads`` read them at about 35 MB/s, in the window's process, whose share of the CPU is
one scheduling group's among the eight ranks'. orjson reads the same lines to equal values
about seven times faster. What orjson refuses, the standard library decides: it reads the
``NaN`` and ``Infinity`` literals an older recording may hold, and its error says what is
wrong in the words users already see. Without orjson installed (a rank in an environment of
its own), the standard library reads all.
"""

from __future__ import annotations

import json
from typing import Any

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; a foreign environment may lack it
    orjson = None


def loads(text: str | bytes) -> Any:
    """What ``json.loads(text)`` returns; raises what it raises."""
    if orjson is not None:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass  # the standard library's answer: a value orjson refuses, or its error
    return json.loads(text)
