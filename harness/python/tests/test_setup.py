"""What issue 44 asked of the package, as a new user meets it: the cassette sets up its CLI
(no key, no config of the wrapper's), one name form everywhere with "did you mean", a
cassette named after the test, the ``pi_harness_config`` fixture, fields ignored at test time,
an unused cassette failing at teardown, and the agents this package names being the
registry's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import pi_harness

# A wrapper's minimal call per agent: no key, no model or config of its own where the CLI
# can take them from its home; (argv, stdin).
CALLS = {
    "recorded/text_only.pi87": (["pi", "--mode", "json", "Say hello."], None),
    "codex/codex_text.cx0169": (["codex", "exec", "--json", "--skip-git-repo-check", "Say hello."], None),
    "gemini/gemini_text.gm061": (
        ["gemini", "--model", "gemini-2.5-flash", "--output-format", "stream-json", "--yolo", "--prompt", "Say hello."],
        None,
    ),
    "claude/claude_text.cc21330": (
        ["claude", "--include-partial-messages", "--input-format", "stream-json", "--output-format", "stream-json",
         "--permission-prompt-tool", "stdio", "--print", "--verbose"],
        '{"message":{"content":"say hi","role":"user"},"parent_tool_use_id":null,"session_id":"","type":"user"}\n',
    ),
}


def call(world: pi_harness.World, name: str, env: dict = None) -> subprocess.CompletedProcess:
    argv, stdin = CALLS[name]
    return subprocess.run(
        argv,
        env={**world.env, **(env or {})},
        input=stdin or "",
        capture_output=True,
        text=True,
        timeout=30,
    )


@pytest.mark.parametrize("name", sorted(CALLS))
def test_the_cassette_sets_up_its_cli(name, tmp_path):
    with pi_harness.World(name, name="setup") as w:
        p = call(w, name)
        assert p.returncode == 0, p.stderr
        assert w.report() == []
        described = w.describe()
        api_key_var = pi_harness.AGENTS[w.agent]["api_key_var"]
        home_var = pi_harness.AGENTS[w.agent]["home_var"]
        if api_key_var:
            assert f"{api_key_var}=" in described, described
        if home_var:
            assert f"{home_var}={w.agent_dir} (the world's, holding " in described, described
    # Without what the cassette set up (the test's own empty home and no key), the same call
    # is refused: the setup is what made it pass.
    empty = tmp_path / "empty-home"
    empty.mkdir()
    with pi_harness.World(name, name="probe", allow_unused=True) as probe:
        agent = probe.agent
    spec = pi_harness.AGENTS[agent]
    own = {v: "" for v in [spec["api_key_var"]] if v}
    own.update({v: str(empty) for v in [spec["home_var"]] if v})
    with pi_harness.World(name, name="bare", env=own) as w:
        p = call(w, name)
        assert p.returncode != 0, f"{name} passes without its setup too"
        assert w.describe().count("(the test's own)") == len(own)


def test_a_wrapper_with_its_own_config_and_another_model_still_fails_in_one_line(tmp_path):
    own = tmp_path / "codex-home"
    own.mkdir()
    (own / "config.toml").write_text('model = "o3"\nmodel_provider = "openai"\n')
    with pi_harness.World("codex/codex_text.cx0169", name="own", env={"CODEX_HOME": str(own)}) as w:
        p = call(w, "codex/codex_text.cx0169")
        assert p.returncode == 99, p.stderr
        mismatch, nxt = w.mismatches()
        assert mismatch.startswith('fake-pi: expectation mismatch: expect.effective.model: expected "gpt-5.5", got "o3"')
        assert nxt.startswith("fake-pi: next: ") and "FAKE_PI_IGNORE=model" in nxt, nxt
        assert (own / "config.toml").read_text() == 'model = "o3"\nmodel_provider = "openai"\n'


def test_ignore_passes_a_field_that_differs_without_rewriting_the_cassette(tmp_path):
    own = tmp_path / "codex-home"
    own.mkdir()
    (own / "config.toml").write_text('model = "o3"\nmodel_provider = "openai"\n')
    with pi_harness.World("codex/codex_text.cx0169", name="ign", env={"CODEX_HOME": str(own)}, ignore=["model"]) as w:
        before = Path(w.cassette).read_bytes()
        p = call(w, "codex/codex_text.cx0169")
        assert p.returncode == 0, p.stderr
        assert "FAKE_PI_IGNORE=model (not compared at replay)" in w.describe()
        assert Path(w.cassette).read_bytes() == before


def test_every_name_form_is_one_cassette_and_a_typo_gets_did_you_mean(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    listed = subprocess.run(
        [str(pi_harness.pi_harness_path()), "corpus", "list"], capture_output=True, text=True, check=True
    ).stdout.split()
    line = next(l for l in listed if l.startswith("cassettes/codex/codex_text."))
    for form in (line, "./" + line, "codex/codex_text.cx0169", "codex/codex_text.cx0169.cassette.jsonl"):
        assert pi_harness.case_name(form) == "codex/codex_text.cx0169"
        assert pi_harness.resolve_cassette(form).name == "codex_text.cx0169.cassette.jsonl", form
    with pytest.raises(pi_harness.CassetteNotFound) as e:
        pi_harness.World("codex/codex_txt.cx0169")
    assert str(e.value).endswith("; did you mean codex/codex_text.cx0169?"), e.value
    assert "\n" not in str(e.value)


def test_the_package_names_every_agent_of_the_registry():
    rows = json.loads(
        subprocess.run(
            [str(pi_harness.pi_harness_path()), "agents", "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    assert [r["name"] for r in rows] == list(pi_harness.AGENTS), "an agent of the registry the package does not name"
    for r in rows:
        mine = pi_harness.AGENTS[r["name"]]
        assert (mine["display_name"], mine["home_var"], mine["api_key_var"]) == (
            r["display_name"],
            r["home_var"],
            r["api_key_var"],
        ), r


# ---- the pytest plugin ----

WRAPPER = '''
import subprocess

def ask(model=None):
    argv = ["codex", "exec", "--json", "--skip-git-repo-check"] + (["-m", model] if model else []) + ["Say hello."]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    return p.returncode, "Hello from the scripted model." in p.stdout
'''


def test_a_marked_codex_test_needs_no_key_and_no_config(pytester):
    pytester.makepyfile(wrapper=WRAPPER)
    pytester.makepyfile(
        test_codex="""
import pytest
from wrapper import ask

@pytest.mark.pi_cassette("cassettes/codex/codex_text.cx0169.cassette.jsonl")
def test_hello(pi_world):
    assert ask() == (0, True)

@pytest.mark.pi_cassette("codex/codex_text.cx0169")
def test_other_model(pi_world):
    assert ask("o3") == (0, True)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- fake-pi report -*",
            'fake-pi: expectation mismatch: expect.effective.model: expected "gpt-5.5", got "o3"*',
            "fake-pi: next: *FAKE_PI_IGNORE=model*",
            "*- pi-harness setup -*",
            "cassette */codex_text.cx0169.cassette.jsonl (Codex, as codex on PATH)",
            "CODEX_API_KEY=* (from the cassette: the call needs it set)",
            "CODEX_HOME=* (the world's, holding config.toml)",
        ]
    )


def test_a_cassette_named_after_the_test_under_the_configured_dir(pytester):
    src = pi_harness.resolve_cassette("codex/codex_text.cx0169")
    for d in ("cassettes/test_named", "recs/test_named"):
        (pytester.path / d).mkdir(parents=True)
    shutil.copy(src, pytester.path / "cassettes/test_named/test_default.cassette.jsonl")
    shutil.copy(src, pytester.path / "recs/test_named/test_configured.cassette.jsonl")
    pytester.makepyfile(wrapper=WRAPPER)
    pytester.makepyfile(
        test_named="""
import pytest
from wrapper import ask

def test_default(pi_world):
    assert pi_world.cassette.name == "test_default.cassette.jsonl"
    assert ask() == (0, True)

class TestConfigured:
    @pytest.fixture
    def pi_harness_config(self):
        return {"cassette_dir": "recs"}

    def test_configured(self, pi_world):
        assert pi_world.cassette.parent.name == "test_named" and pi_world.cassette.parent.parent.name == "recs"
        assert ask() == (0, True)

def test_missing(pi_world):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["pi_world: no cassette '*/cassettes/test_named/test_missing': not a file, *"])


def test_the_config_fixture_gives_every_test_of_its_module_defaults(pytester):
    pytester.makepyfile(wrapper=WRAPPER)
    pytester.makepyfile(
        test_config="""
import os
import pytest
from wrapper import ask

@pytest.fixture(scope="module")
def pi_harness_config():
    return {"ignore": ["model"], "env": {"MY_SETTING": "from-config"}}

@pytest.mark.pi_cassette("codex/codex_text.cx0169")
def test_other_model_ignored(pi_world):
    assert os.environ["MY_SETTING"] == "from-config"
    assert os.environ["FAKE_PI_IGNORE"] == "model"
    assert ask("o3") == (0, True)

@pytest.mark.pi_cassette("codex/codex_text.cx0169", env={"MY_SETTING": "marker"})
def test_marker_wins(pi_world):
    assert os.environ["MY_SETTING"] == "marker"
    assert ask() == (0, True)
"""
    )
    pytester.makepyfile(
        test_unconfigured="""
import pytest
from wrapper import ask

@pytest.mark.pi_cassette("codex/codex_text.cx0169")
def test_other_model_compared(pi_world):
    assert ask("o3") == (0, True)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_unconfigured.py::test_other_model_compared*"])


def test_an_unused_cassette_fails_at_teardown_naming_it(pytester):
    # Two directories of two runs each (a directory counts its starts in a state file of its own).
    seq, seq2 = pytester.path / "two-runs", pytester.path / "two-more-runs"
    for d in (seq, seq2):
        d.mkdir()
        for n in ("1-first", "2-second"):
            shutil.copy(pi_harness.resolve_cassette("codex/codex_text.cx0169"), d / f"{n}.cassette.jsonl")
    pytester.makepyfile(wrapper=WRAPPER)
    pytester.makepyfile(
        test_unused=f"""
import pytest
from wrapper import ask

@pytest.mark.pi_cassette("codex/codex_text.cx0169")
def test_never_calls(pi_world):
    pass

@pytest.mark.pi_cassette("codex/codex_text.cx0169", allow_unused=True)
def test_may_not_call(pi_world):
    pass

@pytest.mark.pi_cassette({str(seq)!r})
def test_calls_once_of_two(pi_world):
    assert ask() == (0, True)

@pytest.mark.pi_cassette({str(seq2)!r})
def test_calls_twice(pi_world):
    assert ask() == (0, True)
    assert ask() == (0, True)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(passed=4, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_never_calls*",
            "cassette */codex_text.cx0169.cassette.jsonl was never replayed: the test's code never ran the CLI"
            " (say allow_unused=True if that is expected)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_calls_once_of_two*",
            "cassette */two-runs was replayed in part: 1 of 2 runs; never played: 2-second.cassette.jsonl *",
        ]
    )
    result.stdout.no_fnmatch_line("*ERROR at teardown of test_may_not_call*")
    result.stdout.no_fnmatch_line("*ERROR at teardown of test_calls_twice*")


def test_record_mode_once_records_with_the_agent_of_the_marker(tmp_path, monkeypatch):
    # Before: RecordModeUnavailable for every agent but pi, and a marker without agent= put `pi`
    # on PATH, so a Codex wrapper failed with FileNotFoundError: 'codex'.
    monkeypatch.delenv("CI", raising=False)
    (tmp_path / "hello.llm.json").write_text('{"turns": [{"text": ["Hi"]}]}')
    with pi_harness.World(tmp_path / "hello", record_mode="once", agent="codex", real_pi="/nonexistent/codex") as w:
        assert (w.agent, w.agent_path.name) == ("codex", "codex")
        shim = w.agent_path.read_text()
        assert "'record' '--agent' 'codex' '--record-mode' 'once'" in shim, shim
        assert "'--pi' '/nonexistent/codex'" in shim, shim
        p = subprocess.run(["codex", "exec", "--json", "--skip-git-repo-check", "Say hello."], env=w.env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert p.returncode != 0 and "/nonexistent/codex" in p.stderr, p.stderr
    assert not (tmp_path / "hello.cassette.jsonl").exists()
    with pytest.raises(pi_harness.RecordModeUnavailable, match="^recording Claude Code from a test's call is not supported"):
        pi_harness.World(tmp_path / "hello", record_mode="once", agent="claude", real_pi="/x")


def test_record_mode_once_records_a_codex_cassette_with_real_codex_then_replays_it(pytester, monkeypatch):
    codex = os.environ.get("PI_HARNESS_REAL_CODEX", "")
    if not codex:
        pytest.skip("PI_HARNESS_REAL_CODEX not set (pi-harness install codex 0.169.0 --print-path)")
    monkeypatch.delenv("CI", raising=False)
    (pytester.path / "cassettes").mkdir()
    (pytester.path / "cassettes" / "hello.llm.json").write_text('{"turns": [{"text": ["Hi ", "there."]}]}')
    pytester.makepyfile(
        test_rec=f"""
import subprocess
import pytest

@pytest.mark.pi_cassette("cassettes/hello", agent="codex", real_pi={codex!r})
def test_hello(pi_world):
    r = subprocess.run(["codex", "exec", "--json", "--skip-git-repo-check", "Say hello."],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert '"text":"Hi there."' in r.stdout
"""
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--pi-record-mode", "once").assert_outcomes(passed=1)
    assert (pytester.path / "cassettes" / "hello.cassette.jsonl").is_file()
    # Replayed from now on (the cassette sets up Codex: its provider's key, config.toml).
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
