"""Questions at decision points.

The detectors, the directors (the bank, a model, a person over ACP) and what the loop tells them.
"""
