"""pi-harness for Python: fake-pi (a native binary) replaying recorded runs of pi, Claude Code,
Codex and Gemini CLI for the wrapper you test, and the proof that nothing your test started is left.

pytest (the plugin loads itself)::

    import pytest
    from my_wrapper import run_pi

    @pytest.mark.pi_cassette("recorded/text_only.pi87")
    def test_hello(pi_world):
        assert run_pi("Say hello.", "fake", "fake-model").text == "Hello, world!"

unittest, or anything else: :class:`World` (``with World(...) as w: ...``, or
``self.addCleanup(w.close)``). The binaries: :func:`fake_pi_path`, :func:`pi_harness_path`
(``python -m pi_harness ARGS`` runs ``pi-harness ARGS``).
"""

from ._bins import UnsupportedPlatform, check_platform, corpus, platform_name
from ._bins import fake_pi as fake_pi_path
from ._bins import pi_harness as pi_harness_path
from ._bins import version as _version
from ._procs import Proc
from ._world import (
    HTML_VAR,
    MARKER_VAR,
    RECORD_MODES,
    REPORT_VAR,
    CassetteNotFound,
    LeftoverError,
    RecordModeUnavailable,
    UnusedCassette,
    World,
    resolve_cassette,
)
from ._setup import AGENTS, case_name

__version__ = _version()

__all__ = [
    "AGENTS",
    "HTML_VAR",
    "MARKER_VAR",
    "RECORD_MODES",
    "REPORT_VAR",
    "CassetteNotFound",
    "LeftoverError",
    "Proc",
    "RecordModeUnavailable",
    "UnusedCassette",
    "UnsupportedPlatform",
    "World",
    "__version__",
    "case_name",
    "check_platform",
    "corpus",
    "fake_pi_path",
    "pi_harness_path",
    "platform_name",
    "resolve_cassette",
]
