"""The plain API (no pytest fixture): pi_harness.World in unittest style, the binaries, the
version, and the one line said where there is no binary."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid
from unittest import mock

import pi_harness
from pi_harness import _procs


def run_pi(world: pi_harness.World, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        ["pi", "--mode", "json", "--provider", "fake", "--model", "fake-model", *args],
        env=world.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


class WorldTest(unittest.TestCase):
    def world(self, cassette: str, **kwargs) -> pi_harness.World:
        w = pi_harness.World(cassette, name=self.id(), **kwargs)
        self.addCleanup(w.close)
        return w

    def test_replays_a_bundled_cassette_with_the_worlds_environment(self) -> None:
        w = self.world("recorded/text_only.pi87")
        p = run_pi(w, "Say hello.")
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        self.assertTrue(b'"content":[{"type":"text","text":"Hello, world!"}]' in out, "no answer on stdout")
        self.assertEqual(w.report(), [])
        w.check_none_left()

    def test_zstd_cassettes_run_under_their_agents_name(self) -> None:
        # The bundled long answer is zstd (what the recorder writes for a large run).
        w = self.world("recorded/long_answer.pi73")
        self.assertTrue(w.cassette.name.endswith(".cassette.jsonl.zst"), w.cassette)
        self.assertEqual(w.agent, "pi")
        self.assertEqual(os.path.basename(w.agent_path), "pi")
        # A Claude Code cassette compressed with zstd is still known as Claude Code's.
        here = os.path.dirname(os.path.abspath(__file__))
        c = self.world(os.path.join(here, "fixtures", "claude_text.cc21330.cassette.jsonl.zst"))
        self.assertEqual(c.agent, "claude")
        self.assertEqual(os.path.basename(c.agent_path), "claude")

    def test_a_codex_cassette_gives_a_codex_with_a_codex_home_of_its_own(self) -> None:
        w = self.world("codex/codex_text.cx0169")
        self.assertEqual(w.agent, "codex")
        self.assertEqual(os.path.basename(w.agent_path), "codex")
        self.assertEqual(w.env["CODEX_HOME"], str(w.agent_dir))
        # The cassette set up its CLI: the recorded model and provider in config.toml, a key.
        self.assertEqual(os.listdir(w.agent_dir), ["config.toml"])
        self.assertIn('model = "gpt-5.5"', (w.agent_dir / "config.toml").read_text())
        self.assertTrue(w.env["CODEX_API_KEY"])
        p = subprocess.Popen(
            ["codex", "exec", "--json", "--skip-git-repo-check", "-m", "gpt-5.5", "Say hello."],
            env={**w.env, "CODEX_API_KEY": "sk-test"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn(b'"type":"agent_message","text":"Hello from the scripted model."', out)
        self.assertEqual(w.report(), [])
        w.check_none_left()

    def test_a_gemini_cassette_gives_a_gemini_with_a_cli_home_of_its_own(self) -> None:
        w = self.world("gemini/gemini_text.gm061")
        self.assertEqual(w.agent, "gemini")
        self.assertEqual(os.path.basename(w.agent_path), "gemini")
        self.assertEqual(w.env["GEMINI_CLI_HOME"], str(w.agent_dir))
        self.assertEqual(os.listdir(w.agent_dir), [".gemini"])
        p = subprocess.Popen(
            ["gemini", "--output-format", "stream-json", "-m", "gemini-2.5-flash", "-y", "-p", "Say hello."],
            env={**w.env, "GEMINI_API_KEY": "test-key-for-gemini"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        self.assertIn(b'"content":"scripted model.","delta":true', out)
        self.assertIn(b'"type":"result"', out)
        self.assertEqual(w.report(), [])
        w.check_none_left()

    def test_the_pi_it_starts_is_the_native_fake_pi(self) -> None:
        # A cassette that hangs after its output: the process is there to look at.
        w = self.world("faults/hang_after_output.pi87")
        p = run_pi(w, "list files")
        try:
            assert p.stdout is not None
            p.stdout.readline()
            exe = os.readlink(f"/proc/{p.pid}/exe")
            self.assertEqual(exe, str(pi_harness.fake_pi_path()))
            self.assertEqual(os.path.realpath(w.agent_path), exe)
            with open(f"/proc/{p.pid}/cmdline", "rb") as f:
                self.assertEqual(f.read().split(b"\0")[0], b"pi")
        finally:
            p.kill()
            p.communicate()

    def test_a_mismatch_is_in_the_report(self) -> None:
        w = self.world("recorded/text_only.pi87")
        p = run_pi(w, "Say something else.")
        _, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 99)
        own = [l for l in err.decode().splitlines() if l.startswith("fake-pi: ")]
        self.assertEqual(w.mismatches(), own)
        [entry] = w.report()
        self.assertEqual((entry["pid"], entry["exit"]), (p.pid, 99))
        self.assertTrue(own[0].startswith("fake-pi: expectation mismatch: "), own)

    def test_a_leftover_is_named_killed_and_raised(self) -> None:
        secs = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"
        w = pi_harness.World("recorded/text_only.pi87", name="leak", grace=0.1)
        # Orphaned into its own session with an empty environment: the subreaper finds it.
        subprocess.run(["sh", "-c", f"(setsid env -i sleep {secs} </dev/null >/dev/null 2>&1 &)"], check=True)
        deadline = time.monotonic() + 5
        # (The sleep itself: the subshell's command line holds its words too, until it execs.)
        while not any(p.cmdline == f"sleep {secs}" for p in w.alive()) and time.monotonic() < deadline:
            time.sleep(0.01)
        with self.assertRaises(pi_harness.LeftoverError) as caught:
            w.close()
        self.assertRegex(str(caught.exception), rf"leftover: (\d+) sleep {secs} \(session \1, parent {os.getpid()}\)")
        [left] = caught.exception.leftovers
        self.assertIsNone(_procs.read_proc(left.pid), "killed and reaped")
        self.assertFalse(w.path.exists())

    def test_with_pi_harness_html_a_cancel_too_early_writes_the_replay_page_and_names_it(self) -> None:
        out_dir = tempfile.mkdtemp(prefix="pih-html-")
        self.addCleanup(shutil.rmtree, out_dir, True)
        with mock.patch.dict(os.environ, {pi_harness.HTML_VAR: out_dir}):
            w = pi_harness.World("recorded/sigint_mid_tool.pi87", name="cancel-early", grace=0.2)
        # A call the cassette does not expect, then one the wrapper cancels mid-tool with
        # SIGINT (pi dies at once, its tool's processes live on).
        wrong = subprocess.run(
            ["pi", "--mode", "json", "--provider", "fake", "--model", "other-model", "Run it."],
            env=w.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=30,
        )
        self.assertEqual(wrong.returncode, 99)
        p = run_pi(w, "Run it.")
        for line in p.stdout:
            if b"tool_execution_update" in line:
                break
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=30)
        with self.assertRaises(pi_harness.LeftoverError) as caught:
            w.close()
        message = str(caught.exception)
        self.assertRegex(message, r"\n  timeline: .*\.html$")
        page = message.rsplit("timeline: ", 1)[1]
        self.assertEqual(os.path.dirname(page), out_dir)
        self.assertEqual(str(w.html), page)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        for shown in ("the replay, as it happened", "fake-pi said", "got", "other-model",
                      "SIGINT received", "left over", "sleep 300"):
            self.assertIn(shown, html)
        self.assertEqual(os.listdir(out_dir), [os.path.basename(page)])

    def test_without_pi_harness_html_nothing_is_written(self) -> None:
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop(pi_harness.HTML_VAR, None)
            w = pi_harness.World("recorded/text_only.pi87", name="no-html", grace=0.1)
        self.assertNotIn("FAKE_PI_TIMELINE", w.env)
        secs = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"
        subprocess.run(["sh", "-c", f"(sleep {secs} </dev/null >/dev/null 2>&1 &)"], env=w.env, check=True)
        with self.assertRaises(pi_harness.LeftoverError) as caught:
            w.close()
        self.assertNotIn("timeline:", str(caught.exception))
        self.assertIsNone(w.html)
        self.assertIsNone(w.write_html("anything"))

    def test_the_marker_finds_a_process_that_carries_it(self) -> None:
        w = pi_harness.World("recorded/text_only.pi87", name="marked", grace=0.1)
        secs = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"
        subprocess.run(["sh", "-c", f"(sleep {secs} </dev/null >/dev/null 2>&1 &)"], env=w.env, check=True)
        deadline = time.monotonic() + 5
        while True:  # the subshell is `sh` until it execs sleep
            marked = [p.cmdline for p in _procs.marked(pi_harness.MARKER_VAR, w.marker)]
            if marked == [f"sleep {secs}"] or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        self.assertEqual(marked, [f"sleep {secs}"])
        with self.assertRaises(pi_harness.LeftoverError) as caught:
            w.close()
        self.assertIn(f"sleep {secs}", str(caught.exception))

    def test_two_worlds_at_once_each_claim_their_own(self) -> None:
        a = pi_harness.World("recorded/text_only.pi87", name="a", grace=0.1)
        b = pi_harness.World("recorded/text_only.pi87", name="b", grace=0.1)
        secs = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"
        p = subprocess.Popen(["sleep", secs], env=b.env)
        try:
            self.assertEqual(a.alive(), [])
            self.assertEqual([q.pid for q in b.alive()], [p.pid])
            a.close()
            with self.assertRaises(pi_harness.LeftoverError):
                b.close()
        finally:
            if p.poll() is None:  # b.close() killed and reaped it, unless it failed first
                p.kill()
                p.wait()

    def test_a_world_started_before_a_process_does_not_claim_it(self) -> None:
        outside = subprocess.Popen(["sleep", "30"])
        self.addCleanup(outside.wait)
        self.addCleanup(outside.kill)
        w = self.world("recorded/text_only.pi87")
        self.assertEqual(w.alive(), [])

    def test_bad_input_is_one_clear_error(self) -> None:
        with self.assertRaisesRegex(pi_harness.CassetteNotFound, "^no cassette 'nope': not a file, nor a name"):
            pi_harness.World("nope")
        with self.assertRaisesRegex(pi_harness.RecordModeUnavailable, "record mode 'new_episodes' is not supported"):
            pi_harness.World("recorded/text_only.pi87", record_mode="new_episodes")
        # Recording is on here even on a CI machine, where CI would make record mode once none.
        with mock.patch.dict(os.environ), self.assertRaisesRegex(
            pi_harness.CassetteNotFound, "^no LLM script '.*/mine/hello.llm.json' to record"
        ):
            os.environ.pop("CI", None)
            pi_harness.World("mine/hello", record_mode="once")
        self.assertFalse(os.path.exists("mine"))
        with self.assertRaisesRegex(ValueError, "agent 'opencode': expected one of 'pi', 'claude', 'codex', 'gemini'"):
            pi_harness.World("recorded/text_only.pi87", agent="opencode")


class PackageTest(unittest.TestCase):
    def test_the_version_is_the_binarys(self) -> None:
        out = subprocess.run([str(pi_harness.pi_harness_path()), "--version"], capture_output=True, text=True)
        self.assertEqual(out.stdout.strip(), f"pi-harness {pi_harness.__version__}")
        via_module = subprocess.run([sys.executable, "-m", "pi_harness", "--version"], capture_output=True, text=True)
        self.assertEqual(via_module.stdout, out.stdout)

    def test_the_bundled_corpus_is_the_binarys(self) -> None:
        listed = subprocess.run(
            [str(pi_harness.pi_harness_path()), "corpus", "list"], capture_output=True, text=True, check=True
        ).stdout.split()
        root = pi_harness.corpus()
        on_disk = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        self.assertEqual(sorted(listed), on_disk)

    def test_the_binaries_sit_in_the_venvs_scripts(self) -> None:
        scripts = os.path.dirname(sys.executable)
        self.assertEqual(os.path.dirname(pi_harness.fake_pi_path()), os.path.realpath(scripts))
        self.assertEqual(os.path.dirname(pi_harness.pi_harness_path()), os.path.realpath(scripts))

    def test_no_binary_for_this_platform_is_one_line(self) -> None:
        code = (
            "import platform, runpy; platform.machine = lambda: 'arm64'; "
            "runpy.run_module('pi_harness', run_name='__main__')"
        )
        p = subprocess.run([sys.executable, "-c", code, "--version"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stdout, "")
        self.assertRegex(p.stderr, r"^pi-harness: no fake-pi binary for linux-arm64 \(the package carries linux-x64 only\); [^\n]*\n$")


if __name__ == "__main__":
    unittest.main()
