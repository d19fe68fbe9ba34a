"""Child processes: every one is recorded, stopped by its id at the end, and killed by the kernel
if this process dies first (``PR_SET_PDEATHSIG``), so nothing outlives a run."""

import ctypes
import os
import signal
import subprocess

_PR_SET_PDEATHSIG = 1
_children = []


def _die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def spawn(args, **kwargs):
    """``subprocess.Popen(args)``, recorded; the child is killed if we die."""
    p = subprocess.Popen(args, preexec_fn=_die_with_parent, **kwargs)
    _children.append(p)
    return p


def stop(p, grace=2.0):
    """Stops one child by id: SIGCONT (it may be stopped), SIGTERM, then SIGKILL."""
    if p.poll() is not None:
        return
    for sig in (signal.SIGCONT, signal.SIGTERM):
        try:
            os.kill(p.pid, sig)
        except ProcessLookupError:
            return
    try:
        p.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        p.wait(timeout=5)


def stop_all():
    """Stops every child started so far, newest first."""
    while _children:
        stop(_children.pop())
