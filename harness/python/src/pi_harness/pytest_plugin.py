"""The pytest plugin (entry point ``pytest11``, loaded by itself once the package is
installed): the ``pi_world`` fixture, the ``pi_cassette`` marker and ``--pi-record-mode``.

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

``--pi-record-mode`` (else ``$PI_HARNESS_RECORD_MODE``, else the ``pi_record_mode`` ini value;
the marker's ``record_mode=`` for one test):
``none`` (default; also whenever ``CI`` is set) replays and fails on a missing cassette;
``once`` records a missing cassette the first time the test's wrapper calls ``pi``, from the
LLM script beside it (``NAME.llm.json``, or the marker's ``script=``) against real pi
(``PI_HARNESS_REAL_PI``, the marker's ``real_pi=``, else ``pi-harness install pi 1.5.2``);
``all`` records again, and a recording that differs waits beside the cassette for
``pi-harness cassette review`` (listed at the end of the run).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterator, List, Optional

import pytest

from ._bins import UnsupportedPlatform
from ._world import (
    RECORD_MODES,
    CassetteNotFound,
    LeftoverError,
    RecordModeUnavailable,
    World,
    check_record_mode,
)

# The test item's world, for its reports (an attribute: any pytest version has one).
_WORLD = "_pi_harness_world"
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
        "pi_cassette(cassette, *, agent=None, speed='0', grace=0.5, record_mode=None, script=None, real_pi=None, "
        "pi_version=None): the cassette the pi_world fixture replays: a path, or a name in the bundled corpus "
        "such as recorded/text_only.pi87; script: the LLM script it is recorded from (default NAME.llm.json beside it)",
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


def _settings(request: pytest.FixtureRequest) -> Dict[str, Any]:
    """The marker's arguments, with the cassette of an indirect parametrization first."""
    mark = request.node.get_closest_marker("pi_cassette")
    kwargs: Dict[str, Any] = dict(mark.kwargs) if mark else {}
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
    cassette: Optional[str] = s.pop("cassette", None)
    if cassette is None:
        pytest.fail(
            "pi_world: no cassette: mark the test @pytest.mark.pi_cassette('recorded/text_only.pi87') "
            "(a path, or a name in the bundled corpus)",
            pytrace=False,
        )
    s.setdefault("record_mode", _record_mode(request.config))
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
    try:
        world.close()
    except LeftoverError as e:
        left = str(e)
    if left is not None:
        pytest.fail(left, pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    outcome = yield
    report = outcome.get_result()
    world = getattr(item, _WORLD, None)
    if world is None or not report.failed:
        return
    lines = world.mismatches()
    if lines:
        report.sections.append(("fake-pi report", "\n".join(lines)))
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
