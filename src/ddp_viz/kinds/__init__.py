"""The kinds of run, one folder each (see :mod:`ddp_viz.model.registry`).

A folder ``<id>/`` holds everything one kind adds: ``__init__.py`` (or ``kind.py``, for a
package imported where the registration's imports are not wanted) registers its
:class:`~ddp_viz.model.registry.RunKind` (pure: no torch, no Qt), beside its events, its scene,
its report; ``engine.py`` is what a rank runs (torch, no Qt); ``form.py`` its fields in the
window (Qt, no torch). A kind may also have a ``qt/`` package (more of the window: a run
streamed in from outside, its page's own views and keys), a ``cli.py`` (subcommands of
``ddp-viz``) and a ``bench/`` package (``ddp-viz bench`` targets); the watched kind has all three.
The core finds the folders by discovery and never imports one by name.
"""

import os

# More folders of kinds, for a kind that lives outside the package (a test's toy kind, a
# course's own): DDP_VIZ_KINDS_PATH lists them as PATH does; each holds kind packages. The
# variable reaches the engine and its ranks, which inherit the environment.
__path__ += [p for p in os.environ.get("DDP_VIZ_KINDS_PATH", "").split(os.pathsep) if p]
