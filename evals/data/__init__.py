"""Data the package ships, read through :mod:`importlib.resources` (checkout and wheel alike).

- ``bank/``: the question bank (``questions.yaml``) and the limit-claim phrases;
- ``tasks/<target>/<target>.py``: the Inspect task files, registered as ``evals/<target>``;

Each target's own files (contract, start kernel, recipe, context notes) live in its folder,
:mod:`evals.targets`. ``bank`` and ``tasks`` are symbolic links to the repository's top-level
folders, which stay their documented locations; building a wheel (``pip install .``) copies the
files behind them into the package. A Docker build context leaves ``bank/`` and ``tasks/`` out
(``sandboxes/*/Dockerfile.dockerignore``), so a sandbox image installs neither.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

__all__ = ["resource"]


def resource(*parts: str) -> Traversable:
    """The packaged file or folder at ``parts`` below this package, e.g. ``("bank", "x")``."""
    node = files(__name__)
    for part in parts:
        node = node / part
    return node
