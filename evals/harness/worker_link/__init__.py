"""The parent's side of the workers: starting them, the channel, deadlines, their logs.

``worker_client`` and ``worker_log`` run in the parent; ``channel`` (length-prefixed JSON
headers with raw tensor payloads) is spoken by both ends. Whatever arrives over the channel
from the candidate's worker is the candidate's to forge: a failure code only the harness
gives is re-attributed to the candidate, and a death or a hang is reported as the candidate's.
"""
