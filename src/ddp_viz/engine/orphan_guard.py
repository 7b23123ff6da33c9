"""Imported first by the forkserver, before :mod:`.warm` imports torch: the forkserver dies
with the engine that started it.

An engine stopped while it starts (a window that quits at once) left its forkserver, and the
resource tracker it holds open, running without a parent until the forkserver's imports
ended, ten seconds or more later.
"""

import os
import signal

from ddp_viz.engine.pool import set_parent_death_signal

set_parent_death_signal(signal.SIGKILL)
if os.getppid() == 1:  # the engine was gone before the signal could be asked for
    os._exit(0)
