"""Which Inspect sandbox a task runs in, and where its definitions live.

Docker and Kubernetes sandboxes are defined in the repository's ``sandboxes/`` folder (the
images are built from the whole repository, so a wheel does not carry them): in a checkout
(editable install) it is found beside the package; an installed wheel finds it through
``$KERNELSEEK_ROOT``, a checkout of the repository. The local sandbox needs neither.
"""

from __future__ import annotations

import os
from pathlib import Path

import evals
from evals.bench.config.settings import TaskSettings
from evals.bench.config.targets import bench_target
from evals.bench.config.validate import TaskArgumentError

__all__ = ["ROOT_ENV", "checkout_root", "sandbox_spec"]

ROOT_ENV = "KERNELSEEK_ROOT"


def checkout_root() -> Path:
    """``$KERNELSEEK_ROOT``, else the folder holding the imported ``evals`` package."""
    found = os.environ.get(ROOT_ENV)
    return Path(found) if found else Path(evals.__file__).resolve().parent.parent


def sandbox_spec(settings: TaskSettings, *, root: Path | None = None) -> str | tuple[str, str]:
    """Inspect's sandbox argument for the settings' sandbox kind.

    Args:
        settings: The task's settings (target and sandbox kind).
        root: A checkout holding ``sandboxes/`` (default: :func:`checkout_root`).

    Raises:
        TaskArgumentError: A docker or k8s sandbox, and no ``sandboxes/`` folder to define it.
    """
    if settings.sandbox == "local":
        return "local"
    folder = bench_target(settings.target).sandbox_folder
    sandboxes = (root or checkout_root()) / "sandboxes"
    if settings.sandbox == "docker":
        spec = ("docker", sandboxes / folder / "compose.yaml")
    else:
        spec = ("k8s", sandboxes / "k8s" / f"values-{folder}.yaml")
    if not spec[1].is_file():
        raise TaskArgumentError(
            f"sandbox={settings.sandbox} needs {spec[1]}: run from a checkout of the repository "
            f"or set {ROOT_ENV} to one (or use sandbox=local)"
        )
    return (spec[0], str(spec[1]))
