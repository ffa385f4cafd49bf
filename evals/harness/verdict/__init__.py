"""The verdict and its report: one typed record that the parent writes and every reader shares.

``record`` (the versioned JSON schema: :class:`~evals.harness.verdict.record.Verdict`,
read back through ``Verdict.from_json``), ``audit_record`` (an audited timing round),
``provenance`` (what ran where) and ``report`` (progress lines and the results table). Written
by the parent only; the failure codes it carries are :mod:`evals.harness.failures`, which
the parent re-attributes when a worker reports one (:mod:`evals.harness.worker_link.worker_client`).
"""
