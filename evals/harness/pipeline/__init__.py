"""The parent's pipeline: one run from the command line to its verdict.

Runs in the parent, the harness's own process, which never loads a candidate's code. It
trusts its own files and the machine it checked (``environment``), nothing a worker or the
build sends. ``runner`` flows one way: build (:mod:`evals.harness.building`), static checks
(:mod:`evals.harness.static`), judging under the device's lock (:mod:`evals.harness.judging`),
then the verdict (:mod:`evals.harness.verdict`).

Modules: ``cli`` (the command line), ``runner`` (check, bench, score), ``environment`` (what
the machine must have).
"""
