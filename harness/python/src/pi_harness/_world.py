"""One test's world, without pytest: a temp dir, fake-pi on a private ``PATH`` under the
agent's name (``pi``, ``claude``, ``codex``, ``gemini``), a cassette, the agent's home with what the
cassette sets up (a dummy key, the recorded config), instant replay, a unique marker, fake-pi's
report file, and at the end the proof that nothing the test started is left (what is left is
killed and named) and, when asked, that the cassette was replayed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _bins, _procs, _setup
from ._setup import AGENTS, IGNORE_VAR, PLAYED_VAR, case_name

MARKER_VAR = "PI_HARNESS_TEST_MARKER"
REPORT_VAR = "FAKE_PI_REPORT"
# Opt-in: a directory where a failing test's world writes its replay page (pi-harness report --html).
HTML_VAR = "PI_HARNESS_HTML"
# What fake-pi writes of each start for that page.
TIMELINE_VAR = "FAKE_PI_TIMELINE"
RECORD_MODES = ("none", "once", "all")
SCRIPT_SUFFIX = ".llm.json"
DEFAULT_PI_VERSION = "1.5.2"
SUFFIXES = ("", ".cassette.jsonl", ".cassette.jsonl.zst", ".cassette.jsonl.gz")


# The most of fake-pi's report read (a report is a few lines; the rest is left out, said so).
REPORT_LIMIT = 16 << 20


class LeftoverError(AssertionError):
    """Processes the test started were still alive at its end (they have been killed);
    ``evasive`` when new ones kept starting while they were being killed."""

    def __init__(self, message: str, leftovers: List[_procs.Proc], evasive: bool = False) -> None:
        super().__init__(message)
        self.leftovers = leftovers
        self.evasive = evasive


class CassetteNotFound(FileNotFoundError):
    """A cassette that is neither a file nor a name in the bundled corpus."""


class UnusedCassette(AssertionError):
    """The test's cassette was never replayed (its code never ran the CLI), or a directory of
    runs was replayed only in part; raised by :meth:`World.close` unless ``allow_unused``."""


class RecordModeUnavailable(ValueError):
    """A record mode that is not one of :data:`RECORD_MODES`, or recording asked for where it
    cannot happen (a Claude Code cassette, a bundled name)."""


def ci_is_set(env: Optional[Dict[str, str]] = None) -> bool:
    """Whether ``CI`` is set (non-empty, and not ``0`` or ``false``): recording is then off."""
    v = (os.environ if env is None else env).get("CI", "")
    return v != "" and v != "0" and v.lower() != "false"


def check_record_mode(mode: str) -> None:
    """``none`` (replay only), ``once`` (record a missing cassette), ``all`` (record again;
    a changed recording waits for ``pi-harness cassette review``)."""
    if mode in RECORD_MODES:
        return
    if mode == "new_episodes":
        raise RecordModeUnavailable(
            "record mode 'new_episodes' is not supported: a cassette is one call (use 'all' and review)"
        )
    raise RecordModeUnavailable(f"record mode {mode!r}: expected one of {', '.join(RECORD_MODES)}")


def cassette_file(cassette: Union[str, "os.PathLike[str]"]) -> Path:
    """The file a cassette to record is written to: ``cassette`` itself, with
    ``.cassette.jsonl`` added when it has no such suffix."""
    p = Path(cassette)
    if p.name.endswith((".cassette.jsonl", ".cassette.jsonl.gz", ".cassette.jsonl.zst")):
        return p.absolute()
    return p.with_name(p.name + ".cassette.jsonl").absolute()


def script_beside(cassette: Path) -> Path:
    """The LLM script a cassette is recorded from by default: ``NAME.llm.json`` beside
    ``NAME.cassette.jsonl``."""
    name = cassette.name
    for suffix in (".cassette.jsonl.gz", ".cassette.jsonl.zst", ".cassette.jsonl"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return cassette.with_name(name + SCRIPT_SUFFIX)


def _sh(word: str) -> str:
    return "'" + word.replace("'", "'\\''") + "'"


def _existing(cassette: Path) -> Optional[Path]:
    """``cassette``, or the same compressed (``.gz``, ``.zst``), when it is a file."""
    for p in (cassette, Path(str(cassette) + ".gz"), Path(str(cassette) + ".zst")):
        if p.is_file():
            return p
    return None


def parse_report(data: bytes, name: str) -> List[Dict[str, Any]]:
    """fake-pi's report (``FAKE_PI_REPORT``: one JSON object a line), entry by entry. A line
    that is not an entry (cut short, written by something else) becomes an entry of its own
    whose one line names it (``name:N``) and what is wrong, never its content: shown where
    fake-pi's lines are, and the rest of the report is still read."""
    out: List[Dict[str, Any]] = []
    if len(data) > REPORT_LIMIT:
        data = data[:REPORT_LIMIT]
        out.append({"lines": [f"pi-harness: {name}: longer than {REPORT_LIMIT >> 20} MiB; the rest is left out"]})
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            entry: Any = json.loads(raw.decode("utf-8"))
            why = None
        except UnicodeDecodeError as e:
            entry, why = None, f"not UTF-8 at byte {e.start}"
        except ValueError as e:
            entry, why = None, f"not JSON ({getattr(e, 'msg', 'invalid')} at column {getattr(e, 'colno', '?')})"
        except RecursionError:
            entry, why = None, "nested too deep"
        if why is None and not isinstance(entry, dict):
            why = "not a JSON object"
        if why is None:
            lines = entry.get("lines", [])
            if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
                why = "an entry whose `lines` is not a list of strings"
        if why is None:
            out.append(entry)
        else:
            out.append({"bad_line": n, "lines": [f"pi-harness: {name}:{n}: {why}; the line is left out"]})
    return out


def resolve_cassette(cassette: Union[str, "os.PathLike[str]"]) -> Path:
    """A cassette file: ``cassette`` itself when it is a file, else a name in the bundled
    corpus in any form ``pi-harness corpus list`` prints or the tools take
    (``codex/codex_text.cx0169``, ``cassettes/codex/codex_text.cx0169.cassette.jsonl``).
    :class:`CassetteNotFound` says the nearest bundled name when there is one."""
    given = Path(cassette)
    if given.is_file() or (given.is_dir() and _setup.runs_of(given)):
        return given.resolve()
    name = str(cassette)
    if not given.is_absolute() and ".." not in given.parts:
        root = _bins.corpus() / "cassettes"
        for suffix in SUFFIXES:
            p = root / (case_name(name) + suffix)
            if p.is_file():
                return p
    _, why = _setup.show(name)
    hint = why.split("; did you mean ", 1)[1] if "; did you mean " in why else ""
    raise CassetteNotFound(
        f"no cassette {name!r}: not a file, nor a name in the bundled corpus"
        " (pi-harness corpus list shows them, e.g. recorded/text_only.pi87)"
        + (f"; did you mean {hint}" if hint else "")
    )


def agent_of(cassette: Path) -> str:
    """``claude`` for a Claude Code (stream-json) cassette, ``codex`` for a Codex (exec-json)
    one, ``gemini`` for a Gemini CLI (gemini-stream-json) one, else ``pi``: from its header
    (for zstd, which Python's standard library may not read, from ``pi-harness cassette show``)."""
    if cassette.name.endswith(".zst"):
        import subprocess

        try:
            shown = subprocess.run(
                [str(_bins.pi_harness()), "cassette", "show", "--json", str(cassette)],
                stdin=subprocess.DEVNULL, capture_output=True, check=True,
            ).stdout
            agent = json.loads(shown)["pi"]["agent"]
            return agent if agent in ("claude", "codex", "gemini") else "pi"
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
    if not isinstance(header, dict):
        return "pi"
    if header.get("mode") == "stream-json":
        return "claude"
    for agent in ("codex", "gemini"):
        if agent in header:
            return agent
    return "pi"


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
    subreaper so that detached processes come back to it, and by the marker; a descendant
    carrying another marker is left alone only while that marker's world is open), after
    stopping and killing them in rounds until a quiet round (one that forks and exits at once
    is caught too; ``evasive`` says when new ones kept starting meanwhile). A malformed line in
    fake-pi's report is named in :meth:`report`, never fatal. It also reaps this process's dead children started during the test (adopted orphans
    would stay zombies otherwise): a ``Popen`` the test never waited for then reads exit 0.

    ``record_mode`` (default ``$PI_HARNESS_RECORD_MODE``, else ``none``): ``none`` (replay; a missing cassette raises :class:`CassetteNotFound`, and
    every mode is ``none`` when ``CI`` is set), ``once`` (a missing cassette is recorded when the
    wrapper first calls ``pi``: ``pi`` is then ``pi-harness record --record-mode once
    --replay-with fake-pi``, which records the call against real pi from the LLM script
    ``script``, default ``NAME.llm.json`` beside ``NAME.cassette.jsonl``, and replays it),
    ``all`` (record again; a recording that differs waits in ``NAME.cassette.jsonl.new`` for
    ``pi-harness cassette review``: :meth:`pending`). Real pi: ``real_pi``, else
    ``$PI_HARNESS_REAL_PI``, else ``pi-harness install pi VERSION --print-path`` (``pi_version``,
    ``$PI_HARNESS_PI_VERSION``, default 1.5.2).

    **The cassette sets up its CLI.** Where the test gives nothing of its own, the world gives
    the call what the recording had (``pi-harness cassette show --json``'s ``setup``): a dummy
    key in the variable the CLI reads (``CODEX_API_KEY``, ``GEMINI_API_KEY``,
    ``ANTHROPIC_API_KEY``) and the agent's home (``PI_CODING_AGENT_DIR``, ``CODEX_HOME``,
    ``GEMINI_CLI_HOME``: the world's agent dir) holding the config that gives the recorded
    values (pi's ``settings.json``, Codex's ``config.toml``, Gemini CLI's
    ``.gemini/settings.json``). ``env`` (variable -> value) overrides any of it: a home of the
    test's own gets no file. A wrapper that passes its own flags or config is still compared
    exactly. :meth:`describe` lists what was set up. ``ignore``: fields fake-pi does not
    compare for this world (``FAKE_PI_IGNORE``: ``model``, ``env``, ``stdin``, ...; the file
    is not rewritten). ``allow_unused=False``: :meth:`close` raises :class:`UnusedCassette`
    when the cassette was never replayed, or a directory of runs only in part (the pytest
    plugin and ``piWorld`` with a test context check it unless told ``allow_unused``).
    """

    def __init__(
        self,
        cassette: Union[str, "os.PathLike[str]"],
        *,
        agent: Optional[str] = None,
        speed: str = "0",
        name: str = "test",
        grace: float = 0.5,
        record_mode: Optional[str] = None,
        script: Optional[Union[str, "os.PathLike[str]"]] = None,
        real_pi: Optional[Union[str, "os.PathLike[str]"]] = None,
        pi_version: Optional[str] = None,
        subreaper: bool = True,
        env: Optional[Dict[str, str]] = None,
        ignore: Sequence[str] = (),
        allow_unused: bool = True,
    ) -> None:
        record_mode = record_mode or os.environ.get("PI_HARNESS_RECORD_MODE") or "none"
        check_record_mode(record_mode)
        self.record_mode = "none" if ci_is_set() else record_mode
        self.fake_pi = _bins.fake_pi()
        self.recording: Optional[Dict[str, Path]] = None
        target = cassette_file(cassette)
        try:
            found: Optional[Path] = _existing(target) or resolve_cassette(cassette)
            missing = None
        except CassetteNotFound as e:
            found, missing = None, e
        if self.record_mode == "all" or (self.record_mode == "once" and found is None):
            self.cassette = _existing(target) or target
            self.recording = self._recording(target, script, real_pi, pi_version, agent)
        elif found is None:
            if record_mode != "none":
                raise CassetteNotFound(
                    f"{missing}; CI is set, so record mode {record_mode} is none: {target} is not recorded"
                )
            raise CassetteNotFound(str(missing))
        else:
            self.cassette = found
        # What the recording asks of the call (none while recording: there is no cassette yet).
        # (a directory of runs: its first run's)
        first = _setup.runs_of(Path(self.cassette))[0] if self.recording is None else Path(self.cassette)
        facts = _setup.show(str(first))[0] if self.recording is None else None
        shown = ((facts or {}).get("pi") or {}).get("agent")
        recorded_as = self.recording["agent"] if self.recording is not None else None
        self.agent = agent or recorded_as or (shown if shown in AGENTS else None) or agent_of(first)
        if self.agent not in AGENTS:
            raise ValueError(f"agent {self.agent!r}: expected one of {', '.join(repr(a) for a in AGENTS)}")
        self.allow_unused = allow_unused
        clean = "".join(c if c.isalnum() else "_" for c in name)[:60]
        self.path = Path(tempfile.mkdtemp(prefix=f"pih-{clean}-"))
        self.bin_dir = self.path / "bin"
        self.bin_dir.mkdir()
        if self.recording is None:
            os.symlink(self.fake_pi, self.bin_dir / self.agent)
        else:
            # Recording: `pi` records the call (once) with real pi, then fake-pi replays it.
            r = self.recording
            words = [str(_bins.pi_harness()), "record", "--agent", self.agent, "--record-mode", self.record_mode,
                     "--script", str(r["script"]), "--out", str(self.cassette), "--pi", str(r["pi"]),
                     "--replay-with", str(self.fake_pi), "--"]
            shim = self.bin_dir / self.agent
            shim.write_text("#!/bin/sh\nexec " + " ".join(_sh(w) for w in words) + ' "$@"\n', encoding="utf-8")
            shim.chmod(0o755)
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
        home_var = AGENTS[self.agent]["home_var"]
        if home_var:
            # The agent reads its config from here (Codex's config.toml, Gemini CLI's
            # .gemini/settings.json, pi's settings.json): the recording's, unless the test's own.
            self.variables[home_var] = str(self.agent_dir)
        self.played_file = self.path / "fake-pi-played.jsonl"
        self.variables[PLAYED_VAR] = str(self.played_file)
        self.setup = _setup.Setup(facts)
        own = dict(env or {})
        # (a variable the test's environment already has is the test's: left as it is)
        self.set_up: Dict[str, str] = {
            k: v for k, v in self.setup.env.items() if k not in own and not os.environ.get(k)
        }
        self.variables.update(self.set_up)
        self.setup_files: List[Path] = []
        if home_var and home_var not in own:
            self.setup_files = self.setup.write_files(self.agent_dir)
        if ignore:
            names = [ignore] if isinstance(ignore, str) else list(ignore)
            self.variables[IGNORE_VAR] = ",".join(names)
        self.own_env = own
        self.variables.update(own)
        # PI_HARNESS_HTML=DIR: a failing test (and the leftover check) writes its replay page
        # there; fake-pi then writes what each start did for it. Unset: nothing is written.
        self.html_dir: Optional[Path] = Path(os.environ[HTML_VAR]).absolute() if os.environ.get(HTML_VAR) else None
        self.html: Optional[Path] = None
        self._name = clean
        if self.html_dir is not None:
            self.variables[TIMELINE_VAR] = str(self.path / "fake-pi-timeline.jsonl")
        self.env: Dict[str, str] = {**os.environ, **self.variables}
        self._watch = _procs.Watch(MARKER_VAR, self.marker, subreaper=subreaper)
        self._closed = False
        self._last_report: List[Dict[str, Any]] = []

    @staticmethod
    def _recording(
        target: Path,
        script: Optional[Union[str, "os.PathLike[str]"]],
        real_pi: Optional[Union[str, "os.PathLike[str]"]],
        pi_version: Optional[str],
        agent: Optional[str],
    ) -> Dict[str, Any]:
        """What recording ``target`` needs: the agent (``agent``, else the existing cassette's,
        else pi), its LLM script and the real CLI (``real_pi``, else
        ``$PI_HARNESS_REAL_<AGENT>``, else ``pi-harness install AGENT VERSION``: ``pi_version``,
        ``$PI_HARNESS_PI_VERSION`` and 1.5.2 for pi, the newest pinned release for the others)."""
        agent = agent or (agent_of(target) if target.is_file() else "pi")
        if agent not in AGENTS:
            raise ValueError(f"agent {agent!r}: expected one of {', '.join(repr(a) for a in AGENTS)}")
        if agent == "claude":
            raise RecordModeUnavailable(
                "recording Claude Code from a test's call is not supported: its stream-json session needs a client"
                " script; record it with pi-harness record --agent claude --client-script FILE"
            )
        script_path = Path(script).absolute() if script is not None else script_beside(target)
        if not script_path.is_file():
            raise CassetteNotFound(
                f"no LLM script {str(script_path)!r} to record {str(target)!r} from"
                " (write it beside the cassette, or pass script=...; format: pi-harness record --help)"
            )
        real = real_pi or os.environ.get(f"PI_HARNESS_REAL_{agent.upper()}")
        if not real:
            if agent == "pi":
                version = pi_version or os.environ.get("PI_HARNESS_PI_VERSION") or DEFAULT_PI_VERSION
            else:
                rows = json.loads(
                    subprocess.run(
                        [str(_bins.pi_harness()), "agents", "--json"], stdin=subprocess.DEVNULL,
                        capture_output=True, text=True, check=True,
                    ).stdout
                )
                version = pi_version or next(r["newest"] for r in rows if r["name"] == agent)
            p = subprocess.run(
                [str(_bins.pi_harness()), "install", agent, version, "--print-path"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
            )
            if p.returncode != 0:
                raise RecordModeUnavailable(p.stderr.strip() or f"pi-harness install {agent} {version} failed")
            real = p.stdout.strip()
        return {"script": script_path, "pi": Path(real), "agent": agent}

    def describe(self) -> str:
        """What this world set up for the call, a line each: the cassette and agent, each
        variable it gave (from the cassette, or the test's own), the agent's home and the files
        written there, the fields ignored at replay."""
        lines = [f"cassette {self.cassette} ({AGENTS[self.agent]['display_name']}, as {self.agent} on PATH)"]
        for k, v in sorted(self.set_up.items()):
            lines.append(f"{k}={v} (from the cassette: the call needs it set)")
        for k, v in sorted(self.own_env.items()):
            lines.append(f"{k}={v} (the test's own)")
        home_var = AGENTS[self.agent]["home_var"]
        if home_var and home_var not in self.own_env:
            held = ", ".join(str(p.relative_to(self.agent_dir)) for p in self.setup_files) or "nothing"
            lines.append(f"{home_var}={self.agent_dir} (the world's, holding {held})")
            for p in self.setup_files:
                try:
                    text = p.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    text = "(gone)"
                for line in text.splitlines():
                    lines.append(f"    {p.relative_to(self.agent_dir)}: {line}")
        if IGNORE_VAR in self.variables:
            lines.append(f"{IGNORE_VAR}={self.variables[IGNORE_VAR]} (not compared at replay)")
        return "\n".join(lines)

    def check_played(self) -> None:
        """Raise :class:`UnusedCassette` when the cassette was never replayed, or a directory of
        runs only in part (by fake-pi's ``FAKE_PI_PLAYED`` trace)."""
        refused = any("exit" in entry for entry in self.report())
        problem = _setup.unused(Path(self.cassette), self.played_file, refused=refused)
        if problem is not None:
            raise UnusedCassette(problem)

    def pending(self) -> List[Path]:
        """Re-recordings of this world's cassette waiting for ``pi-harness cassette review``."""
        name = self.cassette.name
        for suffix in (".gz", ".zst"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        found = [self.cassette.with_name(name + s + ".new") for s in ("", ".gz", ".zst")]
        return [p for p in found if p.is_file()]

    @property
    def agent_path(self) -> Path:
        """The ``pi`` (or ``claude``) link on the private ``PATH``."""
        return self.bin_dir / self.agent

    def report(self) -> List[Dict[str, Any]]:
        """fake-pi's report so far: one entry per start that said something of its own
        (``{"pid", "exit", "cassette", "lines"}``), e.g. a mismatch with exit 99. A line that
        is not such an entry is one whose ``lines`` name it (``FILE:N``) and say what is
        wrong (:func:`parse_report`): a bad report never stops the test's end."""
        if self._closed:
            return self._last_report
        try:
            with open(self.report_file, "rb") as f:
                data = f.read(REPORT_LIMIT + 1)
        except FileNotFoundError:
            return []
        except OSError as e:
            return [{"lines": [f"pi-harness: {self.report_file}: cannot read it: {e.strerror}"]}]
        return parse_report(data, str(self.report_file))

    def mismatches(self) -> List[str]:
        """Every line fake-pi said of its own, in order (``fake-pi: expectation mismatch: ...``)."""
        return [line for entry in self.report() for line in entry.get("lines", [])]

    def write_html(self, failure: Optional[str] = None, leftovers: Sequence[str] = ()) -> Optional[Path]:
        """Write this world's replay page (``pi-harness report --html``: the replay as it
        happened, what fake-pi said, ``leftovers``, ``failure``, beside the cassette's own run)
        into ``$PI_HARNESS_HTML``; its path, or ``None`` when the variable is unset or the page
        could not be written (said on stderr). The pytest plugin calls it for a failing test,
        :meth:`check_none_left` for leftovers."""
        if self.html_dir is None or not self.path.exists():
            return None
        self.html_dir.mkdir(parents=True, exist_ok=True)
        out = self.html_dir / f"{self._name}-{self.marker[-8:]}.html"
        left = self.path / "leftovers.txt"
        left.write_text("".join(f"{line}\n" for line in leftovers), encoding="utf-8")
        args = [str(_bins.pi_harness()), "report", "--html", str(out), "--cassette", str(self.cassette),
                "--leftovers", str(left), "--name", self._name]
        for flag, f in (("--fake-pi-report", self.report_file), ("--fake-pi-timeline", self.path / "fake-pi-timeline.jsonl")):
            if f.is_file():
                args += [flag, str(f)]
        if failure:
            args += ["--failure", failure[:4000]]
        p = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if p.returncode != 0:
            sys.stderr.write(f"pi-harness: the replay page was not written: {p.stderr.strip()}\n")
            return None
        self.html = out
        return out

    def alive(self) -> List[_procs.Proc]:
        """The processes the test started that are alive now."""
        return self._watch.alive()

    def check_none_left(self, grace: Optional[float] = None) -> None:
        """Raise :class:`LeftoverError` naming every process the test started that is alive
        ``grace`` seconds from now (polled), after killing them."""
        left, quiet = self._watch.leftovers(self.grace if grace is None else grace)
        if quiet:  # (and the looks reaped this process's dead children started since)
            return
        killed, evasive = self._watch.kill_all(left)
        if not killed and not evasive:
            return
        if not killed:
            message = (
                "processes the test started kept starting and ending at its end, and none was caught alive"
                " (evasive: something below this process forks and exits at once)"
            )
        else:
            what = "1 process" if len(killed) == 1 else f"{len(killed)} processes"
            how = "; evasive: new ones kept starting while they were being killed" if evasive else ""
            lines = "\n".join(f"  leftover: {p.describe()}" for p in killed)
            message = f"{what} the test started still running at its end (killed now{how}):\n{lines}"
        page = self.write_html(failure=message, leftovers=[p.describe() for p in killed])
        if page is not None:
            message += f"\n  timeline: {page}"
        raise LeftoverError(message, killed, evasive)

    def close(self) -> None:
        """The end of the test: the leftover check (:meth:`check_none_left`), then the temp
        dir removed. Called twice, the second does nothing."""
        if self._closed:
            return
        self._last_report = self.report()
        self._closed = True  # (report() now gives the last one: the temp dir goes)
        try:
            self.check_none_left()
            if not self.allow_unused and self.recording is None:
                self.check_played()
        finally:
            self._watch.close()
            shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> "World":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"World(cassette={str(self.cassette)!r}, agent={self.agent!r}, marker={self.marker!r})"

