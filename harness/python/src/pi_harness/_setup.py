"""What a cassette asks of its caller, as ``pi-harness cassette show --json`` says it: the
one name form every tool takes (:func:`case_name`), the cassette a name means (with the
binary's "did you mean" when it means none), and the setup a world gives the call where the
test gave nothing of its own (a dummy key in the variable the CLI reads, the agent's home
with the config that gives the recorded values: pi's ``settings.json``, Codex's
``config.toml``, Gemini CLI's ``.gemini/settings.json``; Claude Code needs its key alone).
The agents this package knows are :data:`AGENTS`, with the variables each reads."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import _bins

# Every agent CLI the harness knows (`pi-harness agents --json`), with the variable naming its
# home and the one it reads its key from. A test of this package fails when the registry
# has an agent this table does not name.
AGENTS: Dict[str, Dict[str, Optional[str]]] = {
    "pi": {"display_name": "pi", "home_var": "PI_CODING_AGENT_DIR", "api_key_var": None},
    "claude": {"display_name": "Claude Code", "home_var": None, "api_key_var": "ANTHROPIC_API_KEY"},
    "codex": {"display_name": "Codex", "home_var": "CODEX_HOME", "api_key_var": "CODEX_API_KEY"},
    "gemini": {"display_name": "Gemini CLI", "home_var": "GEMINI_CLI_HOME", "api_key_var": "GEMINI_API_KEY"},
}

# The fields a replay can be told to ignore (fake-pi's FAKE_PI_IGNORE; `cassette relax --ignore`).
IGNORE_VAR = "FAKE_PI_IGNORE"
# Where fake-pi leaves a line per start that played its cassette (for the unused check).
PLAYED_VAR = "FAKE_PI_PLAYED"

_SUFFIXES = (".cassette.jsonl.zst", ".cassette.jsonl.gz", ".cassette.jsonl")


def case_name(given: str) -> str:
    """The one name of a bundled cassette, from any form of it: ``codex/codex_text.cx0169``,
    or as ``pi-harness corpus list`` prints it (``cassettes/codex/codex_text.cx0169.cassette.jsonl``),
    with ``./`` in front or a compression suffix behind."""
    s = given.strip()
    while s.startswith("./"):
        s = s[2:]
    if s.startswith("cassettes/"):
        s = s[len("cassettes/"):]
    for suffix in _SUFFIXES:
        if s.endswith(suffix):
            return s[: -len(suffix)]
    return s


def show(cassette: str) -> Tuple[Optional[Dict[str, Any]], str]:
    """``pi-harness cassette show --json CASSETTE``: its facts, or ``None`` and the binary's
    one-line error (which names the nearest bundled name when there is one)."""
    p = subprocess.run(
        [str(_bins.pi_harness()), "cassette", "show", "--json", cassette],
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    if p.returncode != 0:
        line = p.stderr.decode("utf-8", "replace").strip().splitlines()
        message = line[0] if line else f"pi-harness cassette show exited {p.returncode}"
        return None, message[len("error: "):] if message.startswith("error: ") else message
    try:
        facts = json.loads(p.stdout)
    except ValueError:
        return None, "pi-harness cassette show --json printed no JSON"
    return (facts if isinstance(facts, dict) else None), ""


class Setup:
    """What a world sets up for the call from its cassette: ``env`` (variable -> value: the
    dummy key, a variable the CLI sets itself), ``home_var`` (the agent's home variable, or
    ``None``) and ``files`` (path below that home -> content)."""

    def __init__(self, facts: Optional[Dict[str, Any]]) -> None:
        s = (facts or {}).get("setup") or {}
        env = s.get("env") or {}
        self.env: Dict[str, str] = {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {}
        home = s.get("home_var")
        self.home_var: Optional[str] = home if isinstance(home, str) else None
        self.files: Dict[str, str] = {}
        for f in s.get("files") or []:
            if isinstance(f, dict) and isinstance(f.get("path"), str) and isinstance(f.get("content"), str):
                self.files[f["path"]] = f["content"]

    def write_files(self, home: Path) -> List[Path]:
        """Write the files into ``home`` (a fresh directory of the world's); their paths. A
        path that would leave ``home`` is skipped."""
        written = []
        for rel, content in self.files.items():
            p = (home / rel).resolve()
            if home.resolve() not in p.parents:
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(content, encoding="utf-8")
            written.append(home / rel)
        return written


def played(trace: Path) -> List[str]:
    """The cassettes fake-pi's ``FAKE_PI_PLAYED`` trace names, one per start that played."""
    try:
        data = trace.read_bytes()[: 16 << 20]
    except OSError:
        return []
    out = []
    for raw in data.splitlines():
        try:
            entry = json.loads(raw.decode("utf-8"))
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("cassette"), str):
            out.append(entry["cassette"])
    return out


def runs_of(cassette: Path) -> List[Path]:
    """The runs a cassette holds: a directory's cassettes in name order (one per start), else
    the one file."""
    if cassette.is_dir():
        return sorted(p for p in cassette.iterdir() if p.name.endswith(_SUFFIXES) and p.is_file())
    return [cassette]


def unused(cassette: Path, trace: Path, refused: bool = False) -> Optional[str]:
    """The one-line failure when ``cassette`` was not replayed whole (by the trace): never
    played, or a directory played only in part; ``None`` when every run was played.
    ``refused``: fake-pi refused a start (its report says why): the test's code ran the CLI,
    and a test of a refused call (exit 99) is not one whose cassette went unused."""
    names = played(trace)
    runs = runs_of(cassette)
    if not names:
        if refused:
            return None
        return (
            f"cassette {cassette} was never replayed: the test's code never ran the CLI"
            " (say allow_unused=True if that is expected)"
        )
    if len(runs) > 1:
        seen = {Path(n).name for n in names}
        left = [r.name for r in runs if r.name not in seen]
        if left:
            return (
                f"cassette {cassette} was replayed in part: {len(runs) - len(left)} of {len(runs)} runs;"
                f" never played: {', '.join(left)} (say allow_unused=True if that is expected)"
            )
    return None
