"""Confinement and what a confined process leaves behind.

``os_sandbox`` (a seccomp filter) is installed by each worker on itself before it loads
anything of the candidate's, dropping the capability to read other processes' memory
(``memory_walls``, which also seals the parent's own memory before it draws its seed);
``confine`` is the launcher that runs the compiler, linker and
preprocessor with writes only to their build folder, no network and nothing left running. The
rest runs in the parent, looking at the confined processes from outside: ``process_tree``
(nothing the run started outlives it), ``footprint`` (what a candidate's process could
change that outlives it), ``hygiene`` (the environment a child gets), ``lock_tamper`` (locks a
worker holds on the lock folder).
"""
