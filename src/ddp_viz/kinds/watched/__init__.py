"""A watched run: a user's own DDP script, unchanged, under ``ddp-viz watch``.

Its ranks are the script's; ddp-viz only wraps their comm hook (``watch/``, in the script's
processes) and listens. The run has no scenario of ours (``{"watched": true}``), no model of
ours and no known length: the record keeps a bounded history of it (``history``), a step is
complete once every rank reported its timings, and the page (``scene``, ``assets/watched``)
follows the newest step and shows each step whole. Its Qt part (``qt/``) streams a run into
the window and holds its tables and plots.

The registration is ``kind.py``, not this file: every Python process of a watched command loads
``watch/bootstrap`` (and then the capture) from its sitecustomize, which imports this package
first, and the registration's imports (the checks, the history, the page) cost each of them
about 0.4 s of start-up for nothing they use.
"""
