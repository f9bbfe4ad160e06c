"""The pytest plugin (entry point ``pytest11``, loaded by itself once the package is
installed): the ``pi_world`` fixture, the ``pi_cassette`` marker, the ``pi_harness_config``
fixture and ``--pi-record-mode``.

``pi_world`` gives the test a :class:`pi_harness.World` on the cassette its marker names (or
``indirect`` parametrization gives), with the world's variables set in ``os.environ`` for the
test (fake-pi first on ``PATH`` as ``pi`` or ``claude``, the cassette, instant replay, an
empty agent dir, the marker, fake-pi's report file), so a wrapper that inherits the
environment finds it. When the test fails, fake-pi's own lines (exit 99 mismatches) are shown
in a ``fake-pi report`` section; when a process the test started outlives it, the test errors
at teardown naming it (it has been killed). With ``PI_HARNESS_HTML=DIR`` set, a failing test
(and a leftover) also writes its replay page there (``pi-harness report --html``: the replay
as it happened beside its cassette's run) and names it in a ``pi-harness timeline`` section
(the leftover error's last line); a passing test writes nothing.

The cassette sets up its CLI (:class:`pi_harness.World`): a dummy key, the agent's home with
the config that gives the recorded values, unless the test's ``env`` says otherwise; a failing
test shows what was set up in a ``pi-harness setup`` section. A test whose cassette was never
replayed (its code never ran the CLI), or a directory of runs replayed only in part, errors at
teardown naming it, unless the marker says ``allow_unused=True``.

Without a cassette in the marker (or no marker), the test's cassette is named after it, as
pytest-recording does: ``cassettes/MODULE/TEST.cassette.jsonl`` beside the test file (the
directory: ``cassette_dir``). Defaults for every test that sees them come from the
``pi_harness_config`` fixture (override it in a module or a ``conftest.py``)::

    @pytest.fixture(scope="module")
    def pi_harness_config():
        return {"agent": "codex", "cassette_dir": "cassettes", "record_mode": "none",
                "ignore": ["model"], "env": {"MY_VAR": "1"}}

Its keys are the marker's (``agent``, ``speed``, ``grace``, ``record_mode``, ``script``,
``real_pi``, ``pi_version``, ``ignore``, ``env``, ``allow_unused``) and ``cassette_dir``; the
marker's win (``env`` is merged, ``ignore`` joined), and ``--pi-record-mode`` wins over its
``record_mode``.

``--pi-record-mode`` (else ``$PI_HARNESS_RECORD_MODE``, else the ``pi_record_mode`` ini value;
the marker's ``record_mode=`` for one test):
``none`` (default; also whenever ``CI`` is set) replays and fails on a missing cassette;
``once`` records a missing cassette the first time the test's wrapper calls its CLI, from the
LLM script beside it (``NAME.llm.json``, or the marker's ``script=``) against the real CLI of the
marker's ``agent=`` (default pi: ``PI_HARNESS_REAL_PI``, the marker's ``real_pi=``, else
``pi-harness install pi 1.5.2``; Codex and Gemini CLI: ``PI_HARNESS_REAL_CODEX``,
``PI_HARNESS_REAL_GEMINI``, else their pinned release; Claude Code is refused: record it with
``pi-harness record --agent claude --client-script``);
``all`` records again, and a recording that differs waits beside the cassette for
``pi-harness cassette review`` (listed at the end of the run).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

from ._bins import UnsupportedPlatform
from ._world import (
    RECORD_MODES,
    CassetteNotFound,
    LeftoverError,
    RecordModeUnavailable,
    UnusedCassette,
    World,
    check_record_mode,
)

# The test item's world, for its reports (an attribute: any pytest version has one).
_WORLD = "_pi_harness_world"
# Set on a test item whose call failed (its world then skips the unused-cassette check).
_FAILED = "_pi_harness_failed"
# The worlds that recorded in this session, for the pending re-recordings at its end.
_recorded: List[World] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pi-harness", "pi-harness (fake-pi replay)")
    group.addoption(
        "--pi-record-mode",
        action="store",
        default=None,
        metavar="MODE",
        help=f"how pi_world treats cassettes: {', '.join(RECORD_MODES)} (none: replay only, the default and "
        "always when CI is set; once: record a missing cassette with real pi; all: record again, a changed "
        "recording waits for pi-harness cassette review)",
    )
    parser.addini("pi_record_mode", "the default of --pi-record-mode", default="none")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "pi_cassette(cassette=None, *, agent=None, speed='0', grace=0.5, record_mode=None, script=None, real_pi=None, "
        "pi_version=None, ignore=(), env=None, allow_unused=False): the cassette the pi_world fixture replays: a path, "
        "or a name in the bundled corpus such as codex/codex_text.cx0169 (default: cassettes/MODULE/TEST beside the "
        "test file); script: the LLM script it is recorded from (default NAME.llm.json beside it); ignore: fields "
        "fake-pi does not compare; env: variables of the test's own; allow_unused: the test may not run the CLI",
    )
    try:
        check_record_mode(_record_mode(config))
    except RecordModeUnavailable as e:
        raise pytest.UsageError(f"--pi-record-mode: {e}") from None


def _record_mode(config: pytest.Config) -> str:
    return str(
        config.getoption("--pi-record-mode")
        or os.environ.get("PI_HARNESS_RECORD_MODE")
        or config.getini("pi_record_mode")
        or "none"
    )


@pytest.fixture
def pi_harness_config() -> Dict[str, Any]:
    """Defaults for ``pi_world`` (override this fixture in a module or a ``conftest.py``):
    ``agent``, ``cassette_dir``, ``record_mode``, ``ignore``, ``env``, ``allow_unused``, ...;
    the marker's arguments win."""
    return {}


# What the marker (and the config fixture) may say.
_KEYS = ("cassette", "agent", "speed", "grace", "record_mode", "script", "real_pi", "pi_version",
         "ignore", "env", "allow_unused", "cassette_dir")


def default_cassette(request: pytest.FixtureRequest, cassette_dir: Optional[str]) -> str:
    """The cassette named after the test: ``CASSETTE_DIR/MODULE/TEST`` (default ``cassettes``
    beside the test file; a relative dir is taken from there), as pytest-recording names them."""
    path = getattr(request.node, "path", None) or Path(str(request.node.fspath))
    here = Path(path).parent
    base = Path(cassette_dir) if cassette_dir else Path("cassettes")
    if not base.is_absolute():
        base = here / base
    test = "".join(c if c.isalnum() or c in "_.-" else "-" for c in request.node.name).strip("-")
    return str(base / Path(path).stem / test)


def _settings(request: pytest.FixtureRequest) -> Dict[str, Any]:
    """The config fixture's defaults, then the marker's arguments, with the cassette of an
    indirect parametrization first."""
    config = request.getfixturevalue("pi_harness_config") or {}
    if not isinstance(config, dict):
        pytest.fail("pi_harness_config: expected a dict of pi_world's defaults", pytrace=False)
    unknown = sorted(set(config) - set(_KEYS))
    if unknown:
        pytest.fail(f"pi_harness_config: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})", pytrace=False)
    mark = request.node.get_closest_marker("pi_cassette")
    kwargs: Dict[str, Any] = dict(config)
    marked: Dict[str, Any] = dict(mark.kwargs) if mark else {}
    if "env" in marked and "env" in config:
        marked["env"] = {**config["env"], **marked["env"]}
    if "ignore" in marked and "ignore" in config:
        marked["ignore"] = [*config["ignore"], *marked["ignore"]]
    kwargs.update(marked)
    # --pi-record-mode (or $PI_HARNESS_RECORD_MODE) wins over the config fixture, not the marker.
    explicit = request.config.getoption("--pi-record-mode") or os.environ.get("PI_HARNESS_RECORD_MODE")
    if explicit and "record_mode" not in marked:
        kwargs["record_mode"] = explicit
    if mark and mark.args:
        kwargs["cassette"] = mark.args[0]
    param = getattr(request, "param", None)
    if param is not None:
        kwargs["cassette"] = param
    return kwargs


@pytest.fixture
def pi_world(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """fake-pi on the cassette of ``@pytest.mark.pi_cassette(...)``, for this test alone."""
    s = _settings(request)
    cassette_dir = s.pop("cassette_dir", None)
    cassette: Optional[str] = s.pop("cassette", None)
    if cassette is None:
        cassette = default_cassette(request, cassette_dir)
    s.setdefault("record_mode", _record_mode(request.config))
    s.setdefault("allow_unused", False)
    problem = None
    try:
        world = World(cassette, name=request.node.name, **s)
    except (UnsupportedPlatform, CassetteNotFound, RecordModeUnavailable, ValueError, TypeError) as e:
        problem = f"pi_world: {e}"
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    setattr(request.node, _WORLD, world)
    if world.recording is not None:
        _recorded.append(world)
    for key, value in world.variables.items():
        monkeypatch.setenv(key, value)
    yield world
    left = None
    if getattr(request.node, _FAILED, False):
        # The test failed already: that failure says more than "unused" would.
        world.allow_unused = True
    try:
        world.close()
    except (LeftoverError, UnusedCassette) as e:
        left = str(e)
    if left is not None:
        pytest.fail(left, pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.failed:
        setattr(item, _FAILED, True)
    world = getattr(item, _WORLD, None)
    if world is None or not report.failed:
        return
    lines = world.mismatches()
    if lines:
        report.sections.append(("fake-pi report", "\n".join(lines)))
    if report.when == "call":
        report.sections.append(("pi-harness setup", world.describe()))
    # PI_HARNESS_HTML=DIR: the replay page of the failing test, its path in the failure.
    if report.when == "call" and world.html_dir is not None:
        failure = None
        if call.excinfo is not None:
            failure = f"{call.excinfo.typename}: {call.excinfo.value}"
        page = world.write_html(failure=failure, leftovers=[p.describe() for p in world.alive()])
        if page is not None:
            report.sections.append(("pi-harness timeline", f"the replay, beside its cassette: {page}"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """The re-recordings that differ from their cassettes: waiting for review."""
    pending = sorted({str(p) for w in _recorded for p in w.pending()})
    if pending:
        terminalreporter.section("pi-harness: re-recorded cassettes waiting for review")
        for p in pending:
            terminalreporter.write_line(p)
        terminalreporter.write_line("review them: pi-harness cassette review (or --accept-all / --reject-all)")
