"""The final score, made where the agent never was.

The harness run in the sandbox (``harness_exec``), its relays and what crosses them
(``relays``, ``relay_io``), each sample's last checked verdict (``verdict_store``), whose fault
a failure is, and the verdict's summaries and metrics.
"""
