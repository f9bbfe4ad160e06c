"""One test's world, without pytest: a temp dir, fake-pi on a private ``PATH`` under the
agent's name (``pi`` or ``claude``), a cassette, an empty agent dir, instant replay, a unique
marker, fake-pi's report file, and at the end the proof that nothing the test started is
left (what is left is killed and named)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from . import _bins, _procs

MARKER_VAR = "PI_HARNESS_TEST_MARKER"
REPORT_VAR = "FAKE_PI_REPORT"
RECORD_MODES = ("none", "once", "new_episodes", "all")
SUFFIXES = ("", ".cassette.jsonl", ".cassette.jsonl.zst", ".cassette.jsonl.gz")


class LeftoverError(AssertionError):
    """Processes the test started were still alive at its end (they have been killed)."""

    def __init__(self, message: str, leftovers: List[_procs.Proc]) -> None:
        super().__init__(message)
        self.leftovers = leftovers


class CassetteNotFound(FileNotFoundError):
    """A cassette that is neither a file nor a name in the bundled corpus."""


class RecordModeUnavailable(ValueError):
    """A record mode other than ``none``: recording from tests has not landed yet."""


def check_record_mode(mode: str) -> None:
    """Only ``none`` (replay what is recorded) works today; the others are reserved."""
    if mode == "none":
        return
    if mode in RECORD_MODES:
        raise RecordModeUnavailable(
            f"record mode {mode!r} is reserved: recording from tests has not landed yet (only 'none', replay, works)"
        )
    raise RecordModeUnavailable(f"record mode {mode!r}: expected one of {', '.join(RECORD_MODES)}")


def resolve_cassette(cassette: Union[str, "os.PathLike[str]"]) -> Path:
    """A cassette file: ``cassette`` itself when it is a file, else a name in the bundled
    corpus (``recorded/text_only.pi87``, ``claude/claude_bridge_default.cc21332``, with or
    without ``.cassette.jsonl``)."""
    given = Path(cassette)
    if given.is_file():
        return given.resolve()
    name = str(cassette)
    if not given.is_absolute() and ".." not in given.parts:
        root = _bins.corpus() / "cassettes"
        for suffix in SUFFIXES:
            p = root / (name + suffix)
            if p.is_file():
                return p
    raise CassetteNotFound(
        f"no cassette {name!r}: not a file, nor a name in the bundled corpus"
        " (pi-harness corpus list shows them, e.g. recorded/text_only.pi87)"
    )


def agent_of(cassette: Path) -> str:
    """``claude`` for a Claude Code (stream-json) cassette, else ``pi``: from its header
    (for zstd, which Python's standard library may not read, from ``pi-harness cassette show``)."""
    if cassette.name.endswith(".zst"):
        import subprocess

        try:
            shown = subprocess.run(
                [str(_bins.pi_harness()), "cassette", "show", "--json", str(cassette)],
                stdin=subprocess.DEVNULL, capture_output=True, check=True,
            ).stdout
            return "claude" if json.loads(shown)["pi"]["agent"] == "claude" else "pi"
        except (OSError, ValueError, KeyError, TypeError, subprocess.CalledProcessError):
            return "pi"
    opener: Any = open
    if cassette.name.endswith(".gz"):
        import gzip

        opener = gzip.open
    try:
        with opener(cassette, "rt", encoding="utf-8") as f:
            header = json.loads(f.readline())
    except (OSError, ValueError):
        return "pi"
    return "claude" if isinstance(header, dict) and header.get("mode") == "stream-json" else "pi"


class World:
    """fake-pi replaying ``cassette`` for one test. Use it as a context manager, or call
    :meth:`close` at the end (``self.addCleanup(world.close)`` in unittest)::

        with World("recorded/text_only.pi87") as w:
            result = my_wrapper.run("Say hello.", env=w.env)

    ``env`` is this process's environment with the world's variables (``PATH`` first the
    private bin dir holding ``pi`` or ``claude``, a link to the native fake-pi;
    ``FAKE_PI_CASSETTE``, ``FAKE_PI_SPEED``, ``PI_CODING_AGENT_DIR``, the marker,
    ``FAKE_PI_REPORT``); ``variables`` holds those alone. ``close`` (and leaving the ``with``
    block) fails with :class:`LeftoverError` naming every process the test started that is
    still alive ``grace`` seconds later (found below this process, which becomes a child
    subreaper so that detached processes come back to it, and by the marker), after killing
    them. It also reaps this process's dead children started during the test (adopted orphans
    would stay zombies otherwise): a ``Popen`` the test never waited for then reads exit 0.
    """

    def __init__(
        self,
        cassette: Union[str, "os.PathLike[str]"],
        *,
        agent: Optional[str] = None,
        speed: str = "0",
        name: str = "test",
        grace: float = 0.5,
        record_mode: str = "none",
        subreaper: bool = True,
    ) -> None:
        check_record_mode(record_mode)
        self.fake_pi = _bins.fake_pi()
        self.cassette = resolve_cassette(cassette)
        self.agent = agent or agent_of(self.cassette)
        if self.agent not in ("pi", "claude"):
            raise ValueError(f"agent {self.agent!r}: expected 'pi' or 'claude'")
        clean = "".join(c if c.isalnum() else "_" for c in name)[:60]
        self.path = Path(tempfile.mkdtemp(prefix=f"pih-{clean}-"))
        self.bin_dir = self.path / "bin"
        self.bin_dir.mkdir()
        os.symlink(self.fake_pi, self.bin_dir / self.agent)
        self.agent_dir = self.path / "agent"
        self.agent_dir.mkdir()
        self.report_file = self.path / "fake-pi-report.jsonl"
        self.marker = f"{clean}-{os.getpid()}-{uuid.uuid4().hex}"
        self.grace = grace
        self.variables: Dict[str, str] = {
            "PATH": f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "FAKE_PI_CASSETTE": str(self.cassette),
            "FAKE_PI_SPEED": speed,
            "PI_CODING_AGENT_DIR": str(self.agent_dir),
            MARKER_VAR: self.marker,
            REPORT_VAR: str(self.report_file),
        }
        self.env: Dict[str, str] = {**os.environ, **self.variables}
        self._watch = _procs.Watch(MARKER_VAR, self.marker, subreaper=subreaper)
        self._closed = False
        self._last_report: List[Dict[str, Any]] = []

    @property
    def agent_path(self) -> Path:
        """The ``pi`` (or ``claude``) link on the private ``PATH``."""
        return self.bin_dir / self.agent

    def report(self) -> List[Dict[str, Any]]:
        """fake-pi's report so far: one entry per start that said something of its own
        (``{"pid", "exit", "cassette", "lines"}``), e.g. a mismatch with exit 99."""
        if self._closed:
            return self._last_report
        try:
            text = self.report_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def mismatches(self) -> List[str]:
        """Every line fake-pi said of its own, in order (``fake-pi: expectation mismatch: ...``)."""
        return [line for entry in self.report() for line in entry.get("lines", [])]

    def alive(self) -> List[_procs.Proc]:
        """The processes the test started that are alive now."""
        return self._watch.alive()

    def check_none_left(self, grace: Optional[float] = None) -> None:
        """Raise :class:`LeftoverError` naming every process the test started that is alive
        ``grace`` seconds from now (polled), after killing them."""
        left = self._watch.leftovers(self.grace if grace is None else grace)
        if not left:
            self._watch.reap()
            return
        killed = self._watch.kill_all(left)
        what = "1 process" if len(killed) == 1 else f"{len(killed)} processes"
        lines = "\n".join(f"  leftover: {p.describe()}" for p in killed)
        raise LeftoverError(f"{what} the test started still running at its end (killed now):\n{lines}", killed)

    def close(self) -> None:
        """The end of the test: the leftover check (:meth:`check_none_left`), then the temp
        dir removed. Called twice, the second does nothing."""
        if self._closed:
            return
        self._last_report = self.report()
        self._closed = True
        try:
            self.check_none_left()
        finally:
            shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> "World":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"World(cassette={str(self.cassette)!r}, agent={self.agent!r}, marker={self.marker!r})"

