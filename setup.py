"""The package list, found rather than kept by hand (everything else is in pyproject.toml).

A kind of run is a folder under src/ddp_viz/kinds/; its packages join the wheel by being there.
The content folder assets/ ships as the data-only package ddp_viz_assets (package-dir in
pyproject.toml maps it), which ``[tool.setuptools.packages.find]`` cannot express beside
src/'s packages: hence this file and its one line of logic.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages("src", include=["ddp_viz", "ddp_viz.*"]), "ddp_viz_assets"])
