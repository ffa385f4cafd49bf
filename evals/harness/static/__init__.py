"""Static checks of a candidate: its includes, linked symbols, torch operators, system calls.

Runs in the parent, on the candidate's source and the objects its build left, never running
them (the preprocessor that lists the includes runs confined,
:mod:`evals.harness.sandbox.confine`); ``baseline_prebuild`` builds the target's trivial
kernel beside the candidate's, for the symbol check. The policy each target declares is
:mod:`evals.harness.targets.source_policy`. The worker program imports ``static_checks``
through the trace (:mod:`evals.harness.tracing.trace`, to list the candidate's objects) and
runs no check.
"""
