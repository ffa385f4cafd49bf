"""What the build child prints for the parent to read (:mod:`evals.harness.building.build_child`).

Kept apart from the child so that importing the harness never imports the child's module:
``python -m evals.harness.building.build_child`` then runs it without runpy's warning that the
module was already imported, which landed in every build log.
"""

COMPILER_FAILED = "KERNELSEEK-COMPILER-FAILED"
"""The line the child prints when the compiler itself rejected the source."""
BUILT = "KERNELSEEK-BUILD"
"""The start of the child's own lines (its confinement; the library linked, not loaded),
which the parent reads and leaves out of the build log."""
