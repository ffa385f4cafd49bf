"""Building a candidate: compiled and linked, never loaded, in a confined child process.

``build`` runs in the parent and starts the build child (``build_child``, ``python -m
evals.harness.building.build_child``), which runs the compiler and linker under
:mod:`evals.harness.sandbox.confine` and never ``dlopen``s what it built: the first load of a
candidate's library is in the candidate's worker. The parent trusts only the child's exit and
its one line of protocol (``build_protocol``); ``cache_dir``, ``compile_command`` and
``cuda_driver`` are read by both.
"""
