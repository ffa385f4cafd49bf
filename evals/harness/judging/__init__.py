"""Judging a built candidate: its scenarios verified, timed and traced, then the upstreams.

Runs in the parent. It drives the workers through :mod:`evals.harness.worker_link` and
trusts nothing they answer until a check made from outside agrees: accuracy against its own
float64 reference (:mod:`evals.harness.verification`), the candidate's times against the
parent's clock (:mod:`evals.harness.clock_checks`), launches against the trace
(:mod:`evals.harness.tracing`).

Modules: ``judge_locked`` (the whole pass under the device's lock), ``judge_suite`` (a suite
in one session), ``judge`` (one scenario), ``judge_time`` (its timing), ``host_issue`` (the cap
on a call's host work), ``judge_upstreams``
(the upstreams once the candidate's process is gone), ``warm_start`` (workers started before
the lock), ``retime`` (outliers), ``timing_record`` (a timing answer merged into a result).
"""
