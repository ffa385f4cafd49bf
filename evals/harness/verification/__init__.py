"""Verification: outputs against the float64 reference and the accuracy rule.

``verify``, ``sampled_check`` and ``kv_rewrite`` run in the parent, on outputs fetched from
the worker and on a reference the parent computes itself. ``guards`` (inputs left untouched,
outputs fresh) runs inside the workers, next to the candidate's calls: its findings are
evidence against a candidate, never for one.
"""
