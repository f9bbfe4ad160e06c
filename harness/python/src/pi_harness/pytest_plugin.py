"""The pytest plugin (entry point ``pytest11``, loaded by itself once the package is
installed): the ``pi_world`` fixture, the ``pi_cassette`` marker and ``--pi-record-mode``.

``pi_world`` gives the test a :class:`pi_harness.World` on the cassette its marker names (or
``indirect`` parametrization gives), with the world's variables set in ``os.environ`` for the
test (fake-pi first on ``PATH`` as ``pi`` or ``claude``, the cassette, instant replay, an
empty agent dir, the marker, fake-pi's report file), so a wrapper that inherits the
environment finds it. When the test fails, fake-pi's own lines (exit 99 mismatches) are shown
in a ``fake-pi report`` section; when a process the test started outlives it, the test errors
at teardown naming it (it has been killed).
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, Optional

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


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pi-harness", "pi-harness (fake-pi replay)")
    group.addoption(
        "--pi-record-mode",
        action="store",
        default=None,
        metavar="MODE",
        help=f"how pi_world treats cassettes: {', '.join(RECORD_MODES)} (only 'none', replay, works today; the rest are reserved)",
    )
    parser.addini("pi_record_mode", "the default of --pi-record-mode", default="none")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "pi_cassette(cassette, *, agent=None, speed='0', grace=0.5, record_mode=None): the cassette the "
        "pi_world fixture replays: a path, or a name in the bundled corpus such as recorded/text_only.pi87",
    )
    try:
        check_record_mode(_record_mode(config))
    except RecordModeUnavailable as e:
        raise pytest.UsageError(f"--pi-record-mode: {e}") from None


def _record_mode(config: pytest.Config) -> str:
    return str(config.getoption("--pi-record-mode") or config.getini("pi_record_mode") or "none")


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
