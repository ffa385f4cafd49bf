"""The worker program: what runs inside the worker processes, apart from the parent.

Two processes run it: the candidate's worker, which loads the candidate's library (its first
``dlopen``) under the OS sandbox, and the upstreams' worker, which never does. In the
candidate's worker every line here shares a process with the candidate's code, which can
rewrite its memory: nothing computed here is trusted by the parent unless checked from outside
(:mod:`evals.harness` THREATS.md). The parent imports nothing from this package but
:mod:`evals.harness.worker.protocol` (a test holds it to that); it starts the program with
``python -m evals.worker_entry`` (:mod:`evals.harness.worker_client`).

Modules: ``serve`` (the request loop), ``wall`` (back-to-back batches for the parent's
clock), ``warm`` (upstream warm-up calls), ``timed_outputs`` (outputs kept from timed calls),
``errors`` (a candidate's exceptions as failures), ``heap`` (freed memory kept for reuse),
``protocol`` (what both sides share).
"""
