"""The parent's link to its workers: starting them, the channel, deadlines, logs, the session.

``worker_client``, ``worker_log``, ``process_state`` (a worker's state as ``/proc`` says it),
``session`` (what judging needs across its phases: the workers, the seed, the tally) and
``budget`` (the candidate's time budget) run in the parent;
``channel`` (length-prefixed JSON headers with raw tensor payloads) and ``protocol`` (what
both ends share) are spoken by both ends. Whatever arrives over the channel from the
candidate's worker is the candidate's to forge: a failure code only the harness gives is
re-attributed to the candidate, and a death or a hang is reported as the candidate's.
"""
