"""Verification: outputs against the float64 reference and the accuracy rule.

Runs in the parent only, on outputs fetched from a worker and on a reference it computes
itself: ``verify`` (one output, and the reference with the accuracy baseline), ``sampled_check``
(the integrity checks' accuracy test), ``kv_rewrite`` (the partial-rewrite probe's edit).
"""
