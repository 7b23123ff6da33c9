"""Watching a user's own DDP script: ``ddp-viz watch -- torchrun …``.

- :mod:`.boot` holds a ``sitecustomize`` that the watched command's Python processes load from
  ``PYTHONPATH``; it installs :mod:`.capture` once torch's DDP module is imported, so nothing
  in the user's script changes.
- :mod:`.capture` (torch, in the user's processes) wraps DDP's comm hook, or the script's own,
  and turns each step into events of the stream; :mod:`.sender` (no torch) hands them to the
  listener through a bounded queue that never blocks training.
- :mod:`.listener` (no torch, no Qt) checks each connection's token proof, validates every
  line, puts every rank on its own clock, and records.
"""
