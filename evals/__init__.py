"""KernelSeek Bench: verified attention-kernel speedups for comparing coding-agent strategies.

The scoring harness lives in :mod:`evals.harness` and depends on torch and numpy only.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
