"""Capabilities: what a root supervisor's children keep, and how they drop the rest."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs its import; mypy reads the names below all the same
if TYPE_CHECKING:
    from typing import Any

# Capabilities (linux/capability.h).  As root, the sandbox's policy (pool.py, sandbox.py)
# leaves this supervisor only the few it needs; a job must end with none at all, bounding
# set included (bwrap, started as root, does not narrow that set).
_PR_CAPBSET_DROP = 24
_CAP_VERSION_3 = 0x20080522
# What the fork server keeps, as root, for the part of a child's set-up that precedes
# its drop to the job's uid: entering the job's own directory (DAC_OVERRIDE), signalling
# its children (KILL), and the drop itself (SETUID, SETGID).
FORK_SERVER_CAPS = (1 << 1) | (1 << 5) | (1 << 6) | (1 << 7)
_LIBC: Any = None


def _libc() -> Any:
    # Imported only by a supervisor that drops jobs to a uid (as root): ctypes costs
    # start-up time that an unprivileged worker does not need to pay.
    global _LIBC
    if _LIBC is None:
        import ctypes  # as root only (see above)

        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def narrow_capabilities(inheritable: int) -> None:
    """In a child before its exec: empty the bounding set (no exec can regain a
    capability) and set the inheritable set to ``inheritable``; for a root process,
    what it keeps across the exec is then exactly that set."""
    import ctypes  # as root only: an unprivileged worker never narrows capabilities

    libc = _libc()
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[2] = inheritable & data[1]
    data[5] = 0
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as fh:
        last = int(fh.read())
    for cap in range(last + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
