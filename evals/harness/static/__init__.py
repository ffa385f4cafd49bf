"""Static checks of a candidate: its includes, linked symbols, torch operators, system calls.

Runs in the parent, on the candidate's source and the objects its build left, never running
them (the preprocessor that lists the includes runs confined, :mod:`evals.harness.sandbox.confine`).
The worker program imports these modules through :mod:`evals.harness.targets.base` but does not
call them.
"""
