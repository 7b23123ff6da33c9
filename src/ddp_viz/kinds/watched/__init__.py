"""A watched run: a user's own DDP script, unchanged, under ``ddp-viz watch``."""

from __future__ import annotations

from ddp_viz.kinds.watched import events as _events  # noqa: F401  (defines, so registers)
