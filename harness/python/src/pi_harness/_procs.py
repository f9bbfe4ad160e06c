"""Processes as /proc shows them: the snapshot a world takes when it starts, the leftovers it
finds when it ends (its descendants started since, with this process a child subreaper so
that orphans come back to it, and every process carrying its marker), killing and reaping.

The same rules as ``pi-harness leftovers``: this process and its ancestors never count; a
zombie, or a process with SIGKILL pending, is gone for every purpose but the kernel's
bookkeeping and does not count either.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import time
from typing import Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

PR_SET_CHILD_SUBREAPER = 36
SIGKILL_BIT = 1 << (signal.SIGKILL - 1)


class Proc(NamedTuple):
    """One process: what a leftover line shows, and its start time (clock ticks after boot)."""

    pid: int
    ppid: int
    sid: int
    state: str
    start: int
    cmdline: str

    def describe(self) -> str:
        """``PID COMMAND LINE (session S, parent P)``, as ``pi-harness leftovers`` prints it."""
        return f"{self.pid} {self.cmdline} (session {self.sid}, parent {self.ppid})"

    @property
    def key(self) -> Tuple[int, int]:
        """(pid, start time): a pid reused by another process is another key."""
        return (self.pid, self.start)


def read_proc(pid: int) -> Optional[Proc]:
    """The process ``pid``, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    close = stat.rfind(")")
    comm = stat[stat.find("(") + 1 : close]
    fields = stat[close + 2 :].split()
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
    except OSError:
        argv = []
    # fields[0] is the state (field 3 of stat); the start time is field 22.
    return Proc(
        pid=pid,
        ppid=int(fields[1]),
        sid=int(fields[3]),
        state=fields[0],
        start=int(fields[19]),
        cmdline=" ".join(argv) if argv else f"[{comm}]",
    )


def all_pids() -> List[int]:
    """Every pid in /proc."""
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def self_and_ancestors() -> Set[int]:
    """This process and every ancestor up to pid 1."""
    out: Set[int] = set()
    pid = os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        p = read_proc(pid)
        if p is None:
            break
        pid = p.ppid
    return out


def gone(p: Proc) -> bool:
    """A zombie, or a process with SIGKILL pending: it cannot do anything any more."""
    if p.state in ("Z", "X"):
        return True
    try:
        with open(f"/proc/{p.pid}/status") as f:
            for line in f:
                key, _, mask = line.partition(":")
                if key in ("SigPnd", "ShdPnd") and int(mask.strip(), 16) & SIGKILL_BIT:
                    return True
    except (OSError, ValueError):
        return True
    return False


def become_subreaper() -> None:
    """Make this process a child subreaper (Linux): a process its descendants orphan is
    reparented to it instead of init, so a detached one is still found below it."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(e)}")


def descendants(root: int) -> List[Proc]:
    """Every process below ``root``, from one pass over /proc."""
    procs = [p for p in (read_proc(pid) for pid in all_pids()) if p is not None]
    children: Dict[int, List[Proc]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    out: List[Proc] = []
    todo = [root]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c.pid)
    return out


def env_value(pid: int, var: str) -> Optional[str]:
    """The value of ``var`` in the environment ``pid`` started with (None: unset or unreadable)."""
    prefix = f"{var}=".encode()
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for kv in f.read().split(b"\0"):
                if kv.startswith(prefix):
                    return kv[len(prefix) :].decode("utf-8", "replace")
    except OSError:
        pass
    return None


def marked(var: str, value: str) -> List[Proc]:
    """Live processes whose environment holds ``var=value``, this process and its ancestors
    excepted."""
    needle = f"{var}={value}".encode()
    mine = self_and_ancestors()
    out = []
    for pid in all_pids():
        if pid in mine:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
        except OSError:
            continue
        p = read_proc(pid)
        if p is not None and not gone(p):
            out.append(p)
    return out


class Watch:
    """What a world started: taken at its start, asked at its end."""

    def __init__(self, var: str, marker: str, subreaper: bool = True) -> None:
        self.var = var
        self.marker = marker
        if subreaper:
            become_subreaper()
        self.before = {p.key for p in descendants(os.getpid())}

    def alive(self) -> List[Proc]:
        """The live processes started since: new descendants (but those carrying another
        world's marker: a test running beside this one started them) and marked processes."""
        found = {
            p.pid: p
            for p in descendants(os.getpid())
            if p.key not in self.before and not gone(p) and env_value(p.pid, self.var) in (None, self.marker)
        }
        for p in marked(self.var, self.marker):
            found.setdefault(p.pid, p)
        return sorted(found.values(), key=lambda p: p.pid)

    def leftovers(self, grace: float) -> List[Proc]:
        """What is still alive after at most ``grace`` seconds (polled: at once when nothing is)."""
        end = time.monotonic() + grace
        left = self.alive()
        while left and time.monotonic() < end:
            time.sleep(0.01)
            left = self.alive()
        return left

    def kill_all(self, first: Iterable[Proc] = ()) -> List[Proc]:
        """SIGKILL ``first``, then whatever is still alive or appears meanwhile (polled until
        nothing is, at most two seconds), then reap what is this process's child. Returns
        every process killed."""
        killed: Dict[int, Proc] = {}
        todo = list(first)
        end = time.monotonic() + 2.0
        while todo:
            for p in todo:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                killed[p.pid] = p
            if time.monotonic() > end:
                break
            todo = [p for p in self.alive() if p.pid not in killed]
        self.reap(wait_for=killed.values())
        return sorted(killed.values(), key=lambda p: p.pid)

    def reap(self, wait_for: Iterable[Proc] = ()) -> None:
        """Reap this process's dead children started since the world began (processes it
        adopted as a subreaper would otherwise stay zombies until it exits), waiting up to a
        second for those of ``wait_for`` that are its children to die."""
        me = os.getpid()
        end = time.monotonic() + 1.0
        pending = {p.pid for p in wait_for}
        while True:
            mine = [p for p in descendants(me) if p.ppid == me and p.key not in self.before]
            for p in mine:
                if p.state in ("Z", "X"):
                    try:
                        os.waitpid(p.pid, os.WNOHANG)
                    except OSError as e:
                        if e.errno != errno.ECHILD:
                            raise
            pending &= {p.pid for p in mine if p.state not in ("Z", "X")}
            if not pending or time.monotonic() > end:
                return
            time.sleep(0.005)
