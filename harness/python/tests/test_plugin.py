"""The pytest plugin, as a user meets it: inner pytest runs (pytester, in a subprocess of
their own) of small test files that use the pi_world fixture."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid

import pytest

import pi_harness
from pi_harness import _procs


def processes_with_arg(arg: str) -> list:
    """Live processes anywhere whose command line holds ``arg`` (a unique sleep length)."""
    out = []
    for pid in _procs.all_pids():
        p = _procs.read_proc(pid)
        if p is not None and arg in p.cmdline.split() and not _procs.gone(p):
            out.append(p)
    return out


def test_ten_lines_replay_a_bundled_cassette_through_a_wrapper(pytester, wrapper_source):
    pytester.makepyfile(wrapper=wrapper_source)
    pytester.makepyfile(
        test_hello="""
import pytest
from wrapper import ask

@pytest.mark.pi_cassette("recorded/text_only.pi87")
def test_hello(pi_world):
    code, text = ask("Say hello.")
    assert (code, text) == (0, "Hello, world!")
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_process_left_behind_fails_the_test_naming_it(pytester):
    # A double fork into its own session with an empty environment: no marker, no parent
    # left; only the subreaper finds it.
    secs = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"
    pytester.makepyfile(
        test_leak=f"""
import subprocess
import pytest

@pytest.mark.pi_cassette("recorded/text_only.pi87")
def test_leaky(pi_world):
    subprocess.run(["sh", "-c", "(setsid env -i sleep {secs} </dev/null >/dev/null 2>&1 &)"], check=True)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_leaky*",
            "1 process the test started still running at its end (killed now):",
            f"  leftover: * sleep {secs} (session *, parent *)",
        ]
    )
    assert processes_with_arg(secs) == []


def unique_secs() -> str:
    """A sleep length no other process on the machine uses: its command line names it."""
    return f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}{uuid.uuid4().int % 1000}"


def none_alive_with(arg: str, over: float = 0.3) -> list:
    """Processes whose command line holds ``arg``, in any of the looks taken over ``over``
    seconds (one look can miss a process that forks and exits at once; many cannot)."""
    end = time.monotonic() + over
    while time.monotonic() < end:
        found = processes_with_arg(arg)
        if found:
            return found
    return []


def kill_all_with(arg: str) -> None:
    """Stop, then kill, every process whose command line holds ``arg``, until many looks in a
    row find none (what a failed test leaves is not left running)."""
    quiet = 0
    while quiet < 50:
        found = processes_with_arg(arg)
        for p in found:
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                try:
                    os.kill(p.pid, sig)
                except OSError:
                    pass
        quiet = 0 if found else quiet + 1


def test_a_child_with_a_made_up_or_stale_marker_is_a_leftover(pytester):
    # It passed before: any marker but the test's own was taken for a test running beside it.
    secs = unique_secs()
    pytester.makepyfile(
        test_foreign=f"""
import os, subprocess
import pytest
import pi_harness

@pytest.mark.pi_cassette("recorded/text_only.pi87")
def test_foreign(pi_world):
    with pi_harness.World("recorded/text_only.pi87", name="closed") as closed:
        stale = closed.marker
    for marker in ("x", stale):
        subprocess.Popen(["sleep", "{secs}"], env={{**os.environ, "PI_HARNESS_TEST_MARKER": marker}})
"""
    )
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines(
            [
                "*ERROR at teardown of test_foreign*",
                "2 processes the test started still running at its end (killed now):",
                f"  leftover: * sleep {secs} (session *, parent *)",
                f"  leftover: * sleep {secs} (session *, parent *)",
            ]
        )
        assert none_alive_with(secs) == []
    finally:
        kill_all_with(secs)


def test_a_malformed_report_line_is_named_and_the_leftover_check_still_runs(pytester):
    # Before: INTERNALERROR (json.loads in the report hook), and the leftover check never ran.
    secs = unique_secs()
    pytester.makepyfile(
        test_report=f"""
import os, subprocess
import pytest

@pytest.mark.pi_cassette("recorded/text_only.pi87")
def test_bad_report(pi_world):
    with open(os.environ["FAKE_PI_REPORT"], "w") as f:
        f.write('{{"pid": 1, "exit": 99, "lines": ["fake-pi: a line of its own"]}}\\n')
        f.write('{{"pid": 2, "exit\\n[1]\\n{{"lines": "x"}}\\n' + "[" * 100000 + "\\n")
    subprocess.Popen(["sleep", "{secs}"])
    assert False, "the test fails"
"""
    )
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
        result.stdout.no_fnmatch_line("*INTERNALERROR*")
        result.assert_outcomes(failed=1, errors=1)
        result.stdout.fnmatch_lines(
            [
                "*ERROR at teardown of test_bad_report*",
                "1 process the test started still running at its end (killed now):",
                f"  leftover: * sleep {secs} (session *, parent *)",
            ]
        )
        result.stdout.fnmatch_lines(
            [
                "*- fake-pi report -*",
                "fake-pi: a line of its own",
                "pi-harness: */fake-pi-report.jsonl:2: not JSON (*); the line is left out",
                "pi-harness: */fake-pi-report.jsonl:3: not a JSON object; the line is left out",
                "pi-harness: */fake-pi-report.jsonl:4: an entry whose `lines` is not a list of strings; the line is left out",
                "pi-harness: */fake-pi-report.jsonl:5: *; the line is left out",
            ]
        )
        assert none_alive_with(secs) == []
    finally:
        kill_all_with(secs)


# Forks a copy of itself and exits, every millisecond, for ever.
FORKER = "import os, time\nwhile True:\n    time.sleep(0.001)\n    if os.fork():\n        os._exit(0)\n"


def errors_section(result):
    """The run's ERRORS section alone: with CI set (as CI sets it), pytest's short summary
    repeats each message whole instead of cut to the terminal's width, which counted every
    error twice and put the other tests' leftovers after the last error's own."""
    return result.stdout.str().split("short test summary info")[0]


def test_a_process_that_forks_and_exits_at_once_is_caught_or_named_evasive(pytester):
    # It passed the check 3 times in 3 before: each look at /proc missed the copy of the moment.
    tag = f"forker-{uuid.uuid4().hex}"
    pytester.makepyfile(
        test_forker=f"""
import subprocess, sys
import pytest

@pytest.mark.parametrize("env", ["marked", "no marker", "marked", "no marker"])
@pytest.mark.pi_cassette("recorded/text_only.pi87", allow_unused=True)
def test_forker(pi_world, env):
    argv = [sys.executable, "-c", {FORKER!r}, "{tag}"]
    subprocess.Popen(argv if env == "marked" else ["env", "-i"] + argv)
"""
    )
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE")
        result.assert_outcomes(passed=4, errors=4)
        out = errors_section(result)
        caught = out.count("the test started still running at its end (killed now")
        evasive = out.count("(evasive: something below this process forks and exits at once)")
        assert caught + evasive == 4, out
        assert none_alive_with(tag, 0.5) == []
    finally:
        kill_all_with(tag)


def test_xdist_charges_each_test_its_own_leftover(pytester):
    pytest.importorskip("xdist")
    secs = [unique_secs() for _ in range(4)]
    tests = "".join(
        f"""
@pytest.mark.pi_cassette("recorded/text_only.pi87", allow_unused=True)
def test_{i}(pi_world):
    subprocess.Popen(["sleep", "{s}"])
    time.sleep(0.3)
"""
        for i, s in enumerate(secs)
    )
    pytester.makepyfile(test_par="import subprocess, time\nimport pytest\n" + tests)
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
        result.assert_outcomes(passed=4, errors=4)
        out = errors_section(result)
        for i, s in enumerate(secs):
            # Each test's teardown names its own sleep, and only it.
            section = out.split(f"ERROR at teardown of test_{i}")[1].split("ERROR at teardown of")[0]
            assert f"sleep {s} " in section and all(f"sleep {o} " not in section for o in secs if o != s), section
        assert all(none_alive_with(s) == [] for s in secs)
    finally:
        for s in secs:
            kill_all_with(s)


def test_a_failing_test_shows_fake_pis_mismatch_lines(pytester, wrapper_source):
    pytester.makepyfile(wrapper=wrapper_source)
    pytester.makepyfile(
        test_mismatch="""
import pytest
from wrapper import ask

@pytest.mark.pi_cassette("recorded/text_only.pi87")
def test_other_model(pi_world):
    code, text = ask("Say hello.", model="other-model")
    assert text == "Hello, world!"
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- fake-pi report -*",
            'fake-pi: expectation mismatch: expect.effective.model: expected "fake-model", got "other-model"*',
        ]
    )


SECRET_CASSETTE = (
    '{"format":"pi-cassette","version":1,"pi":{"version":"0.87.1","dialect":"delta-only"},'
    '"scenario":{"name":"secret","description":"a key marked secret"},'
    '"expect":{"prompt":"Say hello.","env":["PIH_TEST_KEY"],"never_in_argv":[{"env":"PIH_TEST_KEY"}]},'
    '"origin":{"kind":"hand-made","timing":"synthetic"}}\n'
    '{"dt_ms":0,"exit":0}\n'
)


def test_a_failing_tests_report_shows_no_secret(pytester, wrapper_source, monkeypatch):
    """The caller put the key (a value the cassette marks never_in_argv) in the prompt and
    the model: fake-pi's lines, copied into the failing test's output, mask it."""
    key = "sk-live-pytest-0123456789abcdef"
    monkeypatch.setenv("PIH_TEST_KEY", key)
    pytester.makepyfile(wrapper=wrapper_source)
    pytester.path.joinpath("secret.cassette.jsonl").write_text(SECRET_CASSETTE)
    pytester.makepyfile(
        test_secret="""
import os
import pytest
from wrapper import ask

@pytest.mark.pi_cassette("secret.cassette.jsonl")
def test_leaky_prompt(pi_world):
    key = os.environ["PIH_TEST_KEY"]
    code, text = ask("my key is " + key, model=key)
    assert code == 0
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- fake-pi report -*",
            'fake-pi: expectation mismatch: expect.prompt: expected "Say hello.", got "my key is [[]REDACTED]"*',
        ]
    )
    output = "\n".join(result.outlines + result.errlines)
    assert key not in output and key[:16] not in output


def test_with_pi_harness_html_a_failing_test_names_its_replay_page(pytester, wrapper_source, tmp_path):
    pytester.makepyfile(wrapper=wrapper_source)
    pytester.makepyfile(
        test_pages="""
import pytest
from wrapper import ask

@pytest.mark.pi_cassette("recorded/text_only.pi87")
def test_other_model(pi_world):
    code, text = ask("Say hello.", model="other-model")
    assert text == "Hello, world!"

@pytest.mark.pi_cassette("recorded/text_only.pi87")
def test_passes(pi_world):
    assert ask("Say hello.") == (0, "Hello, world!")
"""
    )
    pages = tmp_path / "pages"
    os.environ[pi_harness.HTML_VAR] = str(pages)
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    finally:
        del os.environ[pi_harness.HTML_VAR]
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*- pi-harness timeline -*", f"the replay, beside its cassette: {pages}/test_other_model-*.html"])
    [page] = list(pages.iterdir())
    assert page.name.startswith("test_other_model-"), "the passing test wrote nothing"
    html = page.read_text(encoding="utf-8")
    assert "AssertionError: assert" in html and "fake-pi said" in html and "other-model" in html

    # Unset: no page, no section.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    assert "pi-harness timeline" not in result.stdout.str()
    assert len(list(pages.iterdir())) == 1


@pytest.mark.pi_cassette("claude/claude_bridge_default.cc21332", allow_unused=True)
def test_a_claude_cassette_is_replayed_as_claude(pi_world):
    assert pi_world.agent == "claude"
    assert pi_world.agent_path.name == "claude"
    assert os.path.realpath(pi_world.agent_path) == str(pi_harness.fake_pi_path())
    assert os.environ["PATH"].split(os.pathsep)[0] == str(pi_world.bin_dir)
    assert os.environ["FAKE_PI_CASSETTE"] == str(pi_world.cassette)
    assert os.environ["FAKE_PI_SPEED"] == "0"
    assert os.listdir(os.environ["PI_CODING_AGENT_DIR"]) == []
    assert os.environ["PI_HARNESS_TEST_MARKER"] == pi_world.marker
    assert os.environ["FAKE_PI_REPORT"] == str(pi_world.report_file)


def test_markers_are_unique_and_dirs_private(pytester):
    pytester.makepyfile(
        test_two="""
import os, pytest

seen = []

@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.pi_cassette("recorded/text_only.pi87", allow_unused=True)
def test_world(pi_world, n):
    seen.append((pi_world.marker, str(pi_world.path)))
    assert os.path.isdir(pi_world.path)
    if n == 2:
        assert seen[0][0] != seen[1][0] and seen[0][1] != seen[1][1]
        assert not os.path.exists(seen[0][1]), "the first test's dir was not removed"
"""
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=2)


def test_a_cassette_by_path_and_by_indirect_parametrization(pytester):
    cassette = pi_harness.corpus() / "cassettes" / "recorded" / "auth_401.pi87.cassette.jsonl"
    pytester.makepyfile(
        test_param=f"""
import pytest

@pytest.mark.pi_cassette({str(cassette)!r}, allow_unused=True)
def test_by_path(pi_world):
    assert str(pi_world.cassette) == {str(cassette)!r}

@pytest.mark.parametrize("pi_world", ["recorded/text_only.pi73", "recorded/text_only.pi152"], indirect=True)
@pytest.mark.pi_cassette(allow_unused=True)
def test_by_param(pi_world):
    assert pi_world.cassette.name.startswith("text_only.pi")
"""
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=3)


def test_bad_input_is_one_line(pytester, monkeypatch):
    # Recording is on for this test even on a CI machine: CI would make record_mode="all" none.
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(
        test_bad="""
import pytest

def test_no_marker(pi_world):
    pass

@pytest.mark.pi_cassette("recorded/no_such_case")
def test_unknown(pi_world):
    pass

@pytest.mark.pi_cassette("recorded/text_only.pi87", record_mode="all")
def test_recording(pi_world):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(errors=3)
    assert not (pytester.path / "recorded").exists()
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_no_marker*",
            # Without a marker, the cassette named after the test (as pytest-recording names them).
            "pi_world: no cassette '*/cassettes/test_bad/test_no_marker': not a file, nor a name in the bundled corpus *",
            "*ERROR at setup of test_unknown*",
            "pi_world: no cassette 'recorded/no_such_case': not a file, nor a name in the bundled corpus *",
            "*ERROR at setup of test_recording*",
            "pi_world: no LLM script '*/recorded/text_only.pi87.llm.json' to record '*/recorded/text_only.pi87.cassette.jsonl' from *",
            "*short test summary info*",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*During handling*")


def test_record_mode_option(pytester):
    pytester.makepyfile(test_x="def test_x(): pass")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pi-record-mode", "none").assert_outcomes(passed=1)
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pi-record-mode", "once").assert_outcomes(passed=1)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pi-record-mode", "new_episodes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --pi-record-mode: record mode 'new_episodes' is not supported: *"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pi-record-mode", "sometimes")
    result.stderr.fnmatch_lines(["ERROR: --pi-record-mode: record mode 'sometimes': expected one of none, once, all"])


HELLO_TEST = """
import pytest
from wrapper import ask

@pytest.mark.pi_cassette("cassettes/hello")
def test_hello(pi_world):
    code, text = ask("Say hello.")
    assert (code, text) == (0, "Hello, world!")
"""


def _hello_project(pytester, wrapper_source, text='["Hello", ", world!"]') -> None:
    pytester.makepyfile(wrapper=wrapper_source, test_hello=HELLO_TEST)
    (pytester.path / "cassettes").mkdir(exist_ok=True)
    (pytester.path / "cassettes" / "hello.llm.json").write_text('{"turns": [{"text": %s}]}' % text)


def test_with_ci_set_a_missing_cassette_fails_naming_it_and_nothing_is_recorded(pytester, wrapper_source, monkeypatch):
    _hello_project(pytester, wrapper_source)
    monkeypatch.setenv("CI", "1")
    monkeypatch.setenv("PI_HARNESS_REAL_PI", "/nonexistent/pi")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE", "--pi-record-mode", "once")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["pi_world: no cassette 'cassettes/hello': not a file, *; CI is set, so record mode once is none: */cassettes/hello.cassette.jsonl is not recorded"]
    )
    assert sorted(p.name for p in (pytester.path / "cassettes").iterdir()) == ["hello.llm.json"]


def _real_pi() -> str:
    pi = os.environ.get("PI_HARNESS_REAL_PI152", "")
    if not pi:
        pytest.skip("PI_HARNESS_REAL_PI152 not set (pi-harness install pi 1.5.2 --print-path)")
    return pi


def test_once_records_a_missing_cassette_then_all_leaves_a_change_for_review(pytester, wrapper_source, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("PI_HARNESS_REAL_PI", _real_pi())
    _hello_project(pytester, wrapper_source)
    cassette = pytester.path / "cassettes" / "hello.cassette.jsonl"
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(errors=1)
    assert not cassette.exists()
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pi-record-mode", "once").assert_outcomes(passed=1)
    committed = cassette.read_bytes()
    assert b"world!" in committed
    # Replayed from now on, with no real pi at all.
    monkeypatch.setenv("PI_HARNESS_REAL_PI", "/nonexistent/pi")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    # The model now says something else: the test fails against the new recording, which
    # waits beside the cassette; rejecting it keeps the cassette byte for byte.
    monkeypatch.setenv("PI_HARNESS_REAL_PI", _real_pi())
    (pytester.path / "cassettes" / "hello.llm.json").write_text('{"turns": [{"text": ["Good", "bye!"]}]}')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pi-record-mode", "all")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*re-recorded cassettes waiting for review*", "*cassettes/hello.cassette.jsonl.new"])
    assert cassette.read_bytes() == committed
    review = subprocess.run(
        [str(pi_harness.pi_harness_path()), "cassette", "review", "--reject-all", str(pytester.path / "cassettes")],
        capture_output=True,
        text=True,
    )
    assert review.returncode == 0, review.stderr
    assert "Goodbye!" in review.stdout
    assert cassette.read_bytes() == committed
    assert not (pytester.path / "cassettes" / "hello.cassette.jsonl.new").exists()


def test_no_binary_for_this_platform_fails_the_test_in_one_line(pytester):
    pytester.makeconftest("import platform\nplatform.machine = lambda: 'aarch64'\n")
    pytester.makepyfile(
        test_x="""
import pytest

@pytest.mark.pi_cassette("recorded/text_only.pi87")
def test_x(pi_world):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_x*",
            "pi_world: pi-harness: no fake-pi binary for linux-arm64 (the package carries linux-x64 only); *",
            "*short test summary info*",
        ]
    )
    result.stdout.no_fnmatch_line("*During handling*")
    result.stdout.no_fnmatch_line("*Traceback*")
