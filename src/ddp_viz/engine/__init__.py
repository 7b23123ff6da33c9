"""The engine: real DDP ranks over gloo. Imports torch, never Qt.

``python -m ddp_viz.engine`` is the long-lived engine process (see :mod:`.server`).
"""
