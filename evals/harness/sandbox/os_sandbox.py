"""An OS-level sandbox (a Linux seccomp filter) for the worker that runs a candidate's kernel.

The static checks judge what the candidate's objects reference; code that reaches the C
library without a symbol they see (parsing a loaded library's symbol table in memory, say)
still meets this filter. It is an allow-list: every system call not named here fails with
EPERM. The ones only an attack needs (network sockets, new processes, ptrace, namespaces,
kernel modules, privileges, links and permission changes) kill the whole worker with SIGSYS,
which the parent reports as ``sandbox_violation``. On the CPU files are read-only (writing
opens and file changes fail with EPERM) and no thread may start; on the GPU both are allowed
(the CUDA driver's threads, the profiler's trace file). Loaded through libseccomp with
``ctypes``; where it cannot be loaded, :func:`apply` says why and the worker runs without it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from evals.harness.sandbox import memory_walls

SANDBOX_ENV = "KERNELSEEK_SANDBOX"
"""``off`` disables the filter, ``audit`` only logs what it would refuse (debugging; the
verdict says so)."""

_ALLOWED: dict[str, tuple[str, ...]] = {
    "memory": (
        "mmap", "munmap", "mprotect", "madvise", "brk", "mremap", "msync", "mincore", "mlock",
        "mlock2", "munlock", "mlockall", "munlockall", "membarrier", "get_mempolicy",
        "set_mempolicy", "mbind", "pkey_alloc", "pkey_free", "pkey_mprotect",
    ),
    "synchronisation": (
        "futex", "futex_waitv", "sched_yield", "nanosleep", "clock_nanosleep",
        "set_robust_list", "get_robust_list", "rseq", "restart_syscall",
    ),
    "time": (
        "clock_gettime", "clock_getres", "gettimeofday", "time", "times", "getitimer",
        "setitimer", "alarm", "timer_create", "timer_settime", "timer_gettime",
        "timer_getoverrun", "timer_delete", "timerfd_create", "timerfd_settime",
        "timerfd_gettime",
    ),
    "I/O on open descriptors": (
        "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
        "preadv2", "pwritev2", "lseek", "close", "close_range", "dup", "dup2", "dup3", "fcntl",
        "ioctl", "flock", "fsync", "fdatasync", "fadvise64", "readahead", "ftruncate",
        "fallocate", "sendfile", "splice", "tee", "poll", "ppoll", "select", "pselect6",
        "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait",
        "epoll_pwait2", "eventfd", "eventfd2", "pipe", "pipe2", "recvmsg", "sendmsg",
        "recvfrom", "sendto", "recvmmsg", "sendmmsg", "getsockopt", "setsockopt",
        "getsockname", "getpeername", "shutdown",
    ),
    "reading files and their metadata": (
        "fstat", "newfstatat", "stat", "lstat", "statx", "statfs", "fstatfs", "readlink",
        "readlinkat", "getdents", "getdents64", "access", "faccessat", "faccessat2", "getcwd",
        "chdir", "fchdir", "getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr",
        "flistxattr", "umask",
    ),
    "process information": (
        "getpid", "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getresuid",
        "getresgid", "getgroups", "getpgrp", "getpgid", "getsid", "uname", "sysinfo",
        "getrusage", "getrandom", "getcpu", "getpriority", "capget", "ioprio_get",
        "sched_getaffinity", "sched_getparam", "sched_getscheduler", "sched_getattr",
        "sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval",
        "set_tid_address", "arch_prctl", "getrlimit",
    ),
    "signals and exit": (
        "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
        "rt_sigsuspend", "sigaltstack", "pause", "exit", "exit_group",
    ),
}  # fmt: skip
"""Allowed outright, by category (names this architecture lacks are skipped)."""

_FORBIDDEN = (
    "socketpair", "connect", "bind", "listen", "accept", "accept4", "execve",
    "execveat", "fork", "vfork", "ptrace", "process_vm_readv", "process_vm_writev",
    "process_madvise", "process_mrelease", "pidfd_getfd", "pidfd_send_signal", "kcmp",
    "tkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "mount", "umount2", "pivot_root",
    "chroot", "setns", "unshare", "fsopen", "fsmount", "fspick", "open_tree", "move_mount",
    "mount_setattr", "bpf", "perf_event_open", "userfaultfd", "init_module", "finit_module",
    "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "setuid",
    "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
    "setgroups", "capset", "sched_setaffinity", "sched_setscheduler", "sched_setparam",
    "sched_setattr", "setpriority", "ioprio_set", "keyctl", "add_key", "request_key",
    "memfd_create", "memfd_secret", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "name_to_handle_at", "open_by_handle_at", "fanotify_init", "quotactl", "quotactl_fd",
    "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname",
    "setdomainname", "syslog", "vhangup", "uselib", "iopl", "ioperm", "migrate_pages",
    "move_pages", "chown", "fchown", "lchown", "fchownat", "setxattr", "lsetxattr",
    "fsetxattr", "removexattr", "lremovexattr", "fremovexattr", "mknod", "mknodat",
)  # fmt: skip
"""Kill the worker (SIGSYS): no network, processes, privileges, kernel state or owners.
``socket`` too, unless it asks for a local (AF_UNIX) one: that fails with EACCES (below)."""

_LINKS_AND_MODES = (
    "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "fchmodat2",
    "truncate",
)  # fmt: skip
"""Killed where files are read-only (no honest use there); allowed where they are writable
(on an H200 the trace check's profiler session made symbolic links)."""

_FILE_CHANGES = (
    "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat",
    "renameat2", "utime", "utimes", "utimensat", "futimesat",
)  # fmt: skip
"""Allowed where the policy lets files be written, else EPERM like writing opens: torch's
own lazy code calls ``os.makedirs(..., exist_ok=True)`` and probes the temp folder, and copes
with an error where it would die of SIGSYS."""

_PRCTL_OPTIONS = (1, 2, 3, 7, 13, 15, 16, 19, 21, 22, 23, 29, 30, 34, 37, 39, 40, 41, 42, 47,
                  50, 51, 52, 56, 0x53564D41)  # fmt: skip
"""prctl options allowed: getters, thread names, timer slack, seccomp, PR_SET_VMA (glibc names
its heap), SVE lengths; not PR_SET_PTRACER, PR_SET_MM nor PR_SET_DUMPABLE."""

# open(2) flags that ask for more than reading (O_TMPFILE's own bit: O_DIRECTORY alone reads)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | 0o20000000
_CLONE_THREAD = 0x00010000
_CLONE_NAMESPACES = 0x7E020000  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
_KILL_PROCESS = 0x80000000
_ALLOW = 0x7FFF0000
_LOG = 0x7FFC0000
_ATTR_ACT_BADARCH, _ATTR_CTL_TSYNC = 2, 4
_EQ, _NE, _MASKED_EQ = 4, 1, 7
_INT = 0xFFFFFFFF  # compare an int argument's low 32 bits only
_PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 4, 38


def _errno_action(code: int) -> int:
    return 0x00050000 | code


_FUNCTIONAL = frozenset({_ALLOW, _errno_action(errno.ENOSYS)})
"""Actions kept in audit mode: the allowed calls, and the ENOSYS answers libc falls back on."""


@dataclass(frozen=True)
class Policy:
    """What the sandbox lets the candidate's process do beyond the common allow-list.

    Attributes:
        threads: New threads may start (CUDA and the profiler start helper threads); on the
            CPU torch's thread pool is started before the filter and reused.
        file_writes: Files may be created, written, renamed, linked and removed (the GPU
            trace check exports torch's profiler trace to a temporary file in the same
            process).
        own_limits: The process may set its own resource limits (on an H200 the profiler
            session did; a GPU worker has no memory limit to keep).
    """

    threads: bool
    file_writes: bool
    own_limits: bool

    def describe(self) -> str:
        """The policy in words, for the verdict."""
        writes = (
            "file writes allowed by this filter (the trace check exports the profiler's "
            "trace; Landlock confines them to the worker's private folder: see writes)"
        )
        starts = "threads allowed (CUDA and the profiler start helper threads)"
        files = writes if self.file_writes else "files read-only"
        threads = starts if self.threads else "no new threads"
        return f"{files}; no network; no new processes; {threads}"


CPU_POLICY = Policy(threads=False, file_writes=False, own_limits=False)
GPU_POLICY = Policy(threads=True, file_writes=True, own_limits=True)


def policy_for(device: str) -> Policy:
    """The policy for a target's device (``"cpu"`` or ``"cuda"``)."""
    return CPU_POLICY if device == "cpu" else GPU_POLICY


class _ArgCmp(ctypes.Structure):
    _fields_ = (("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64))  # fmt: skip


class SandboxError(RuntimeError):
    """The filter could not be built or loaded."""


def apply(policy: Policy, environ: Mapping[str, str] | None = None) -> dict[str, object]:
    """Load the filter for ``policy`` into this process, every thread included; irreversible.

    Never raises: where the sandbox cannot be had, the record says why. ``KERNELSEEK_SANDBOX``
    ``off`` skips it; ``audit`` loads it with every refusal and kill turned into a kernel log
    entry (``dmesg``: audit type 1326, the system call's number) and nothing enforced, to
    find what a new platform's honest kernels need.

    Returns:
        ``{"seccomp": "active: ..." | "audit: ..." | "unavailable: why" | "off: ...",
        "no_new_privs": bool, "core_dumps": bool, "ptrace": ...}`` (``ptrace``: what
        :func:`evals.harness.sandbox.memory_walls.drop_ptrace` did; absent where the
        sandbox is off or this is not Linux).
    """
    mode = (os.environ if environ is None else environ).get(SANDBOX_ENV, "").strip().lower()
    record: dict[str, object] = {"seccomp": "", "no_new_privs": False, "core_dumps": True}
    if mode == "off":
        return {**record, "seccomp": f"off: {SANDBOX_ENV}=off"}
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        why = f"{sys.platform} {platform.machine()} is not Linux x86_64 or aarch64"
        return {**record, "seccomp": f"unavailable: {why}"}
    record["ptrace"] = memory_walls.drop_ptrace()  # root's worker could read its parent
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2")
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        return {**record, "seccomp": f"unavailable: cannot load libseccomp ({exc})"}
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        why = os.strerror(ctypes.get_errno())
        return {**record, "seccomp": f"unavailable: PR_SET_NO_NEW_PRIVS failed ({why})"}
    record["no_new_privs"] = True
    # a worker killed by SIGSYS writes no core dump (a GPU process's takes minutes)
    record["core_dumps"] = libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0
    try:
        count = _load(lib, lambda rule: _rules(rule, policy), audit=mode == "audit")
    except (SandboxError, AttributeError) as exc:
        return {**record, "seccomp": f"unavailable: {exc}"}
    what = f"allow-list of {count} system calls; {policy.describe()}"
    if mode == "audit":
        return {**record, "seccomp": f"audit: {what}; refusals logged, not enforced "
                f"({SANDBOX_ENV}=audit)"}  # fmt: skip
    return {**record, "seccomp": f"active: {what}"}


def _load(
    lib: ctypes.CDLL,
    add_rules: Callable[[Callable[..., None]], None],
    *,
    audit: bool,
    default: int = _errno_action(errno.EPERM),
) -> int:
    """Build and load a filter; returns how many system calls it allows (some conditionally).

    ``add_rules`` adds the rules through the ``rule(action, name, *comparisons)`` it is given;
    ``default`` answers every system call no rule names.
    """
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_ArgCmp)
    )  # fmt: skip
    lib.seccomp_attr_set.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32)
    lib.seccomp_load.argtypes = lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    ctx = lib.seccomp_init(_LOG if audit else default)
    if not ctx:
        raise SandboxError("seccomp_init failed")
    allowed: set[int] = set()

    def rule(action: int, name: str, *cmps: tuple[int, int, int, int]) -> None:
        nr = lib.seccomp_syscall_resolve_name(name.encode())
        if nr < 0 or (audit and action not in _FUNCTIONAL):
            return  # not a system call of this architecture; or audited by the default
        array = (_ArgCmp * max(len(cmps), 1))(*(_ArgCmp(*c) for c in cmps))
        rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), array)
        if rc < 0:
            raise SandboxError(f"cannot add the rule for {name}: {os.strerror(-rc)}")
        if action == _ALLOW:
            allowed.add(nr)

    try:
        _check(lib.seccomp_attr_set(ctx, _ATTR_CTL_TSYNC, 1), "cannot filter every thread")
        bad_arch = _LOG if audit else _KILL_PROCESS
        _check(lib.seccomp_attr_set(ctx, _ATTR_ACT_BADARCH, bad_arch), "bad-arch action")
        add_rules(rule)
        _check(lib.seccomp_load(ctx), "seccomp_load failed")
    finally:
        lib.seccomp_release(ctx)
    return len(allowed)


def _check(rc: int, what: str) -> None:
    if rc < 0:
        raise SandboxError(f"{what}: {os.strerror(-rc)}")


def _rules(rule: Callable[..., None], policy: Policy) -> None:
    """Every rule of ``policy``: the allow-list, the conditional calls and the killing ones."""
    for names in _ALLOWED.values():
        for name in names:
            rule(_ALLOW, name)
    for name in _FORBIDDEN:
        rule(_KILL_PROCESS, name)
    for name in _LINKS_AND_MODES:
        rule(_ALLOW if policy.file_writes else _KILL_PROCESS, name)
    if policy.file_writes:
        for name in (*_FILE_CHANGES, "open", "openat"):
            rule(_ALLOW, name)
    else:  # reading only; any other open fails with EPERM (the default)
        rule(_ALLOW, "open", (1, _MASKED_EQ, _WRITE_FLAGS, 0))
        rule(_ALLOW, "openat", (2, _MASKED_EQ, _WRITE_FLAGS, 0))
    rule(_errno_action(errno.ENOSYS), "openat2")  # its flags live in memory: libc falls back
    rule(_errno_action(errno.ENOSYS), "clone3")  # likewise: glibc falls back to clone
    rule(_KILL_PROCESS, "clone", (0, _MASKED_EQ, _CLONE_THREAD, 0))  # a new process
    if policy.threads:  # a thread: CLONE_THREAD and no new namespace (else EPERM)
        mask = _CLONE_THREAD | _CLONE_NAMESPACES
        rule(_ALLOW, "clone", (0, _MASKED_EQ, mask, _CLONE_THREAD))
    # glibc's user lookups (getpwuid, e.g. torch's getpass.getuser) ask nscd through a local
    # socket first and fall back to the files when they get none: refuse those, kill the rest
    rule(_errno_action(errno.EACCES), "socket", (0, _EQ, socket.AF_UNIX, 0))
    rule(_KILL_PROCESS, "socket", (0, _NE, socket.AF_UNIX, 0))
    pid = os.getpid()
    for name in ("kill", "tgkill"):  # signals to this process only
        rule(_ALLOW, name, (0, _EQ, pid, 0))
        rule(_KILL_PROCESS, name, (0, _NE, pid, 0))
    rule(_ALLOW, "prlimit64", (2, _EQ, 0, 0))  # reading limits
    if policy.own_limits:
        rule(_ALLOW, "prlimit64", (0, _EQ, 0, 0))
        rule(_ALLOW, "setrlimit")
    for option in _PRCTL_OPTIONS:
        rule(_ALLOW, "prctl", (0, _MASKED_EQ, _INT, option))


_TOOL_DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "mount",
    "umount2", "pivot_root", "chroot", "setns", "unshare", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "init_module",
    "finit_module", "delete_module", "kexec_load", "kexec_file_load", "keyctl", "add_key",
    "request_key",
)  # fmt: skip
"""Refused (EPERM) to the processes that compile or preprocess a candidate's source: what
reaches other processes, the kernel's state or, through io_uring, sockets."""


def apply_tool_filter() -> dict[str, object]:
    """Confine this process and its children (the compiler, linker, ninja) to local work.

    Unlike the worker's allow-list, a compiler runs whatever tools it needs: every system call
    is allowed but sockets of any family (EACCES: glibc's lookups fall back to the files),
    another process's memory and the calls in :data:`_TOOL_DENIED` (EPERM). Irreversible and
    inherited across ``fork`` and ``execve``. ``KERNELSEEK_SANDBOX=off`` skips it, as it does
    the worker's filter. Never raises.

    Returns:
        ``{"seccomp": "active: ..." | "unavailable: why" | "off: ...", "no_new_privs": bool}``.
    """
    record: dict[str, object] = {"seccomp": "", "no_new_privs": False}
    if os.environ.get(SANDBOX_ENV, "").strip().lower() == "off":
        return {**record, "seccomp": f"off: {SANDBOX_ENV}=off"}
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "aarch64"):
        why = f"{sys.platform} {platform.machine()} is not Linux x86_64 or aarch64"
        return {**record, "seccomp": f"unavailable: {why}"}
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("seccomp") or "libseccomp.so.2")
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError as exc:
        return {**record, "seccomp": f"unavailable: cannot load libseccomp ({exc})"}
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        why = os.strerror(ctypes.get_errno())
        return {**record, "seccomp": f"unavailable: PR_SET_NO_NEW_PRIVS failed ({why})"}
    record["no_new_privs"] = True

    def add_rules(rule: Callable[..., None]) -> None:
        rule(_errno_action(errno.EACCES), "socket")
        for name in _TOOL_DENIED:
            rule(_errno_action(errno.EPERM), name)

    try:
        _load(lib, add_rules, audit=False, default=_ALLOW)
    except (SandboxError, AttributeError) as exc:
        return {**record, "seccomp": f"unavailable: {exc}"}
    refused = "sockets, other processes' memory, namespaces, mounts, io_uring, kernel state"
    return {**record, "seccomp": f"active: every system call but {refused}"}
