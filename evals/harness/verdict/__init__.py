"""The verdict and its report: one typed record that every reader shares.

``record`` (the versioned JSON schema, :class:`~evals.harness.verdict.record.Verdict`),
``failures`` (every failure code with its one-line reason, and which of them only the parent
may give), ``provenance`` (what ran where) and ``report`` (progress lines and the results
table). Written by the parent only; ``failures`` is also imported by the workers, whose codes
the parent re-attributes (:mod:`evals.harness.worker_link.worker_client`).
"""
