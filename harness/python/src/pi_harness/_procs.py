"""Processes as /proc shows them: the snapshot a world takes when it starts, the leftovers it
finds when it ends (its descendants started since, with this process a child subreaper so
that orphans come back to it, and every process carrying its marker), killing and reaping.

The same rules as ``pi-harness leftovers``: this process and its ancestors never count; a
zombie, or a process with SIGKILL pending, is gone for every purpose but the kernel's
bookkeeping and does not count either. A descendant carrying another marker is left to its
own world only while that world is open (:func:`world_open`); any other marker is no excuse.

A process that forks a copy of itself and exits every millisecond is gone before one look at
/proc is over: so /proc is read newest process first, a world is clean only after
two or three looks in a row found nothing alive and reaped nothing, and the kill
freezes first (SIGSTOP as each process is found: a stopped process cannot fork), then
kills, in rounds until such a quiet round; a process found after the first round was started
while the others were being killed, and the kill says it was evasive.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import signal
import stat
import tempfile
import time
from typing import Dict, Iterable, List, NamedTuple, Optional, Set, Tuple

PR_SET_CHILD_SUBREAPER = 36
SIGKILL_BIT = 1 << (signal.SIGKILL - 1)
# Looks in a row that find nothing alive (and reap nothing) before a world is clean: two for
# a child subreaper (a copy that was not seen leaves its parent's corpse to reap, in the look
# it ran beside or the next one), three without.
QUIET_LOOKS = 3
# What a world's marker may be made of (others are never looked up as a file name).
MARKER_NAME = re.compile(r"[A-Za-z0-9_.-]{1,200}\Z")


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


def _read(path: str) -> bytes:
    """A whole /proc file, read without Python's buffered file objects (twice as fast: a look
    at /proc reads one file per process)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


def read_proc(pid: int, cmdline: bool = True) -> Optional[Proc]:
    """The process ``pid``, or None when it is gone (its command line left empty unless
    ``cmdline``: one file less to read)."""
    try:
        text = _read(f"/proc/{pid}/stat").decode("utf-8", "replace")
    except OSError:
        return None
    close = text.rfind(")")
    comm = text[text.find("(") + 1 : close]
    fields = text[close + 2 :].split()
    argv: List[str] = []
    if cmdline:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        except OSError:
            pass
    # fields[0] is the state (field 3 of stat); the start time is field 22.
    return Proc(
        pid=pid,
        ppid=int(fields[1]),
        sid=int(fields[3]),
        state=fields[0],
        start=int(fields[19]),
        cmdline=(" ".join(argv) if argv else f"[{comm}]") if cmdline else "",
    )


def all_pids() -> List[int]:
    """Every pid in /proc, highest first: the processes started last are read a moment after
    the listing, before one that forks and exits at once has gone."""
    return sorted((int(n) for n in os.listdir("/proc") if n.isdigit()), reverse=True)


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


def all_procs() -> List[Proc]:
    """Every process, newest first (command lines not read)."""
    return [p for p in (read_proc(pid, cmdline=False) for pid in all_pids()) if p is not None]


def descendants(root: int, procs: Optional[List[Proc]] = None) -> List[Proc]:
    """Every process below ``root``, from one pass over /proc (or ``procs``; command lines not
    read)."""
    procs = all_procs() if procs is None else procs
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


def _environ(pid: int) -> Optional[List[bytes]]:
    """The ``NAME=value`` entries ``pid`` started with (None: gone or unreadable)."""
    try:
        return _read(f"/proc/{pid}/environ").split(b"\0")
    except OSError:
        return None


def _value(env: List[bytes], var: str) -> Optional[str]:
    prefix = f"{var}=".encode()
    for kv in env:
        if kv.startswith(prefix):
            return kv[len(prefix) :].decode("utf-8", "replace")
    return None


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGSTOP)
    except OSError:
        pass


# ---- the worlds open now: a descendant carrying one of their markers is theirs ----

_open: Set[str] = set()
_registry_dir: List[Optional[str]] = []


def _registry() -> Optional[str]:
    """:func:`_find_registry`, once per process."""
    if not _registry_dir:
        _registry_dir.append(_find_registry())
    return _registry_dir[0]


def _find_registry() -> Optional[str]:
    """The directory where open worlds are listed for this user on this machine (one file per
    marker holding its owner's ``PID START``, so that worlds in other threads and processes,
    pytest-xdist's workers and Node's among them, count too); None when it cannot be had
    safely (not a private directory of this user's)."""
    d = os.path.join(tempfile.gettempdir(), f"pi-harness-worlds-{os.getuid()}")
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(d)
    except OSError:
        return None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None
    return d


def open_world(marker: str) -> None:
    """List ``marker`` as a world open in this process (until :func:`close_world`)."""
    _open.add(marker)
    d = _registry()
    me = read_proc(os.getpid(), cmdline=False)
    if d is None or me is None or not MARKER_NAME.match(marker):
        return
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(os.path.join(d, marker), flags, 0o600)
    except OSError:
        return
    with os.fdopen(fd, "w") as f:
        f.write(f"{me.pid} {me.start}\n")


def close_world(marker: str) -> None:
    """``marker``'s world is closed: its processes are nobody's now."""
    _open.discard(marker)
    d = _registry()
    if d is not None and MARKER_NAME.match(marker):
        try:
            os.unlink(os.path.join(d, marker))
        except OSError:
            pass


def world_open(marker: str) -> bool:
    """Whether ``marker`` is the marker of a world open now: in this process, or listed by a
    process that is still the one that listed it (same pid, same start time)."""
    if marker in _open:
        return True
    d = _registry()
    if d is None or not MARKER_NAME.match(marker):
        return False
    try:
        fd = os.open(os.path.join(d, marker), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd) as f:
            pid, start = (int(w) for w in f.read(64).split())
    except (OSError, ValueError):
        return False
    owner = read_proc(pid, cmdline=False)
    return owner is not None and owner.start == start and owner.state not in ("Z", "X")


class Watch:
    """What a world started: taken at its start, asked at its end."""

    def __init__(self, var: str, marker: str, subreaper: bool = True) -> None:
        self.var = var
        self.marker = marker
        self.needle = f"{var}={marker}".encode()
        if subreaper:
            become_subreaper()
        self.quiet_looks = QUIET_LOOKS - 1 if subreaper else QUIET_LOOKS
        procs = all_procs()
        # A process carrying this marker started no sooner than the newest process now (start
        # times only grow): only those have their environment read.
        self.since = max((p.start for p in procs), default=0)
        self.before = {p.key for p in descendants(os.getpid(), procs)}
        open_world(marker)

    def close(self) -> None:
        """The world is over: a process carrying its marker is nobody's any more."""
        close_world(self.marker)

    def claims(self, p: Proc, env: Optional[List[bytes]] = None) -> bool:
        """Whether the new descendant ``p`` is this world's: it carries this world's marker,
        none, or one of no world open now (a stale or made-up one)."""
        env = _environ(p.pid) if env is None else env
        m = None if env is None else _value(env, self.var)
        return m is None or m == self.marker or not world_open(m)

    def look(self, freeze: bool = False, reap: bool = False) -> Tuple[List[Proc], int]:
        """One look at /proc, newest process first: the live processes this world started
        (new descendants it claims, and processes carrying its marker), each SIGSTOPped as
        soon as it is found when ``freeze``; and, when ``reap`` (at the test's end only: a
        test may still wait for its own), how many dead children of this process started
        since the world began were reaped (a sign that something below it still comes and
        goes)."""
        me = os.getpid()
        mine = self_and_ancestors()
        seen: Dict[int, Proc] = {}
        envs: Dict[int, Optional[List[bytes]]] = {}
        found: Dict[int, Proc] = {}
        reaped = 0

        def take(p: Proc) -> None:
            if freeze:
                _stop(p.pid)
            found[p.pid] = read_proc(p.pid) or p

        for pid in all_pids():
            if pid in mine:
                continue
            p = read_proc(pid, cmdline=False)
            if p is None:
                continue
            seen[pid] = p
            if p.key in self.before:
                continue
            if p.ppid == me and p.state in ("Z", "X"):
                reaped += _reap(pid) if reap else 0
                continue
            env = envs[pid] = _environ(pid) if p.start >= self.since else None
            if env is not None and (self.needle in env or (p.ppid == me and self.claims(p, env))):
                if not gone(p):
                    take(p)
        # Deeper descendants (a parent is read after its children), and those whose parent
        # went while this look ran: reparented to this process by now.
        for p in list(seen.values()):
            if p.ppid not in seen and p.ppid not in mine and p.ppid > 1:
                q = read_proc(p.pid, cmdline=False)
                if q is not None:
                    seen[p.pid] = q
        children: Dict[int, List[Proc]] = {}
        for p in seen.values():
            children.setdefault(p.ppid, []).append(p)
        todo = [me]
        while todo:
            for c in children.get(todo.pop(), []):
                todo.append(c.pid)
                if c.pid not in found and c.key not in self.before and not gone(c) and self.claims(c, envs.get(c.pid)):
                    take(c)
        return sorted(found.values(), key=lambda p: p.pid), reaped

    def alive(self) -> List[Proc]:
        """The live processes started since: new descendants (but those carrying the marker
        of another world still open: a test running beside this one started them) and
        marked processes."""
        return self.look()[0]

    def leftovers(self, grace: float) -> Tuple[List[Proc], bool]:
        """What is still alive after at most ``grace`` seconds, and whether the world is
        quiet: ``quiet_looks`` looks in a row found nothing alive and reaped nothing
        (polled: at once when nothing is left)."""
        end = time.monotonic() + grace
        quiet = 0
        while True:
            left, reaped = self.look(reap=True)
            quiet = 0 if left or reaped else quiet + 1
            if quiet >= self.quiet_looks:
                return [], True
            if time.monotonic() >= end:
                return left, False
            time.sleep(0.002 if quiet else 0.01)

    def kill_all(self, first: Iterable[Proc] = ()) -> Tuple[List[Proc], bool]:
        """Freeze, then kill: SIGSTOP and SIGKILL ``first``, then look again (each process
        found SIGSTOPped at once, so that it cannot fork) and kill what was found, in rounds
        until ``quiet_looks`` looks in a row find nothing alive and reap nothing (at most
        two seconds); then reap what is this process's child. Returns every process killed,
        and whether they were evasive: new ones appeared after the first round (started while
        the others were being killed), or the quiet never came."""
        killed: Dict[Tuple[int, int], Proc] = {}
        todo = list(first)
        for p in todo:
            _stop(p.pid)
        evasive = False
        quiet = 0
        rounds = 0
        end = time.monotonic() + 2.0
        while True:
            for p in todo:
                try:
                    os.kill(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                if p.key not in killed:
                    evasive = evasive or rounds > 0
                    killed[p.key] = p
            rounds += 1 if todo else 0
            if time.monotonic() > end:
                evasive = True
                break
            time.sleep(0.002)
            todo, reaped = self.look(freeze=True, reap=True)
            quiet = 0 if todo or reaped else quiet + 1
            if quiet >= self.quiet_looks:
                break
        self.reap(wait_for=killed.values())
        return sorted(killed.values(), key=lambda p: p.pid), evasive

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
                    _reap(p.pid)
            pending &= {p.pid for p in mine if p.state not in ("Z", "X")}
            if not pending or time.monotonic() > end:
                return
            time.sleep(0.005)


def _reap(pid: int) -> int:
    """Reap the dead child ``pid``: 1 when it was reaped here, else 0."""
    try:
        return 1 if os.waitpid(pid, os.WNOHANG)[0] == pid else 0
    except OSError as e:
        if e.errno != errno.ECHILD:
            raise
        return 0
