"""The final score, made where the agent never was.

The harness run in the sandbox, its relays, whose fault a failure is, and the verdict's
summaries and metrics.
"""
