"""Imported first by the forkserver, before :mod:`.warm` imports torch: the forkserver dies
with the engine that started it.

An engine stopped while it starts (a window that quits at once) left its forkserver, and the
resource tracker it holds open, running without a parent until the forkserver's imports
ended, ten seconds or more later.
"""

from ddp_viz import platform

# Linux only in practice (the forkserver is used there); never a polling thread: a forkserver
# must stay single-threaded to fork safely.
platform.die_with_parent(platform.KILL, poll=False)
