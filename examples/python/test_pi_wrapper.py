"""Tests of pi_wrapper against fake-pi (from pi-harness) standing in for pi on PATH.

Needs ``fake-pi`` and ``pi-harness`` on PATH; run with ``python3 -m unittest`` in this directory.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
import uuid

from pi_wrapper import PiRun, run_pi

RUN_TIMEOUT = 20.0


def on_path(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"{name} not found on PATH (cargo install --git <pi-harness repo> fake-pi pi-harness)")
    return found


def leftovers(marker: str, kill: bool = False, grace: str = "0s") -> tuple[int, str]:
    """pi-harness leftovers' exit status (0: nothing carries the marker) and its report.

    grace: how long marked processes get to go away (polled: no wait when none is left); a process
    SIGKILLed by pi a moment ago is still in /proc until the kernel has run its exit.
    kill: SIGKILL what is found.
    """
    args = ["pi-harness", "leftovers", "--marker", marker, "--grace", grace] + (["--kill"] if kill else [])
    p = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stderr


class PiWrapperTest(unittest.TestCase):
    tmp: str
    bin_dir: str
    corpus: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.mkdtemp(prefix="pi-wrapper-python-")
        cls.bin_dir = os.path.join(cls.tmp, "bin")
        os.mkdir(cls.bin_dir)
        os.symlink(on_path("fake-pi"), os.path.join(cls.bin_dir, "pi"))
        cls.corpus = os.path.join(cls.tmp, "corpus")
        export = subprocess.run(["pi-harness", "corpus", "export", cls.corpus], capture_output=True, text=True)
        if export.returncode != 0:
            raise RuntimeError(f"pi-harness corpus export failed ({export.returncode}): {export.stderr}")

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def world(self, cassette: str, speed: str = "0") -> tuple[dict[str, str], str]:
        """The environment for one pi run: fake-pi first on PATH, a cassette, a fresh agent dir, a marker."""
        path = os.path.join(self.corpus, "cassettes", cassette)
        self.assertTrue(os.path.isfile(path), f"no cassette {path}")
        marker = f"pi-wrapper-python-{os.getpid()}-{uuid.uuid4()}"
        # Whatever the test asserted, no process of it outlives it.
        self.addCleanup(leftovers, marker, True)
        env = dict(os.environ)
        env.update(
            PATH=self.bin_dir + os.pathsep + os.environ.get("PATH", ""),
            FAKE_PI_CASSETTE=path,
            FAKE_PI_SPEED=speed,
            PI_CODING_AGENT_DIR=tempfile.mkdtemp(prefix="agent-", dir=self.tmp),
            PI_HARNESS_TEST_MARKER=marker,
        )
        return env, marker

    def assertNothingLeft(self, marker: str) -> None:
        code, report = leftovers(marker, grace="2s")
        self.assertEqual(code, 0, f"processes left behind:\n{report}")

    def test_text_answer(self) -> None:
        env, marker = self.world("recorded/text_only.pi87.cassette.jsonl")
        r = run_pi("Say hello.", "fake", "fake-model", env=env, timeout=RUN_TIMEOUT)
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.text, "Hello, world!")
        self.assertEqual(r.tool_calls, [])
        self.assertTrue(r.completed)
        self.assertEqual(r.stop_reason, "stop")
        self.assertIsNone(r.error)
        self.assertTrue(r.ok)
        self.assertRegex(r.session_id or "", r"^[0-9a-f-]{36}$")
        self.assertNothingLeft(marker)

    def test_tool_call_then_answer(self) -> None:
        env, marker = self.world("recorded/tool_bash.pi87.cassette.jsonl")
        r = run_pi("List the files.", "fake", "fake-model", env=env, timeout=RUN_TIMEOUT)
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.tool_calls, [{"id": "call_1", "name": "bash", "args": {"command": "echo hi; ls"}}])
        self.assertEqual(r.text, "I'll list the files.The directory has a server.")
        self.assertTrue(r.ok)
        self.assertNothingLeft(marker)

    def test_model_error_exit_0(self) -> None:
        env, marker = self.world("recorded/auth_401.pi87.cassette.jsonl")
        r = run_pi("Say something.", "fake", "fake-model", env=env, timeout=RUN_TIMEOUT)
        self.assertEqual(r.exit_code, 0, r.stderr)  # pi exits 0 ...
        self.assertTrue(r.completed)
        self.assertEqual(r.stop_reason, "error")  # ... but the run failed
        self.assertIn("invalid api key", r.error or "")
        self.assertEqual(r.text, "")
        self.assertFalse(r.ok)
        self.assertNothingLeft(marker)

    def test_call_not_matching_the_recording(self) -> None:
        env, marker = self.world("recorded/text_only.pi87.cassette.jsonl")
        r = run_pi("Say hello.", "fake", "other-model", env=env, timeout=RUN_TIMEOUT)
        self.assertEqual(r.exit_code, 99)  # fake-pi: the call does not mean what the recording meant
        self.assertRegex(r.stderr, r"expectation mismatch: expect\.effective\.model")
        self.assertFalse(r.ok)
        self.assertNothingLeft(marker)

    def test_stalled_run_times_out(self) -> None:
        # pi stays alive and silent mid-answer (a provider that stalls); only the caller's timeout ends it.
        env, marker = self.world("faults/hang_after_output.pi87.cassette.jsonl")
        started = time.monotonic()
        r = run_pi("list files", "fake", "fake-model", env=env, timeout=0.5)
        self.assertLess(time.monotonic() - started, 10, "the timeout did not end the run")
        self.assertTrue(r.timed_out)
        self.assertTrue(r.cancelled)
        self.assertEqual(r.exit_code, 143, f"pi: code {r.exit_code} signal {r.signal}\n{r.stderr}")
        self.assertEqual(r.text, "I'll list the files.")
        self.assertFalse(r.completed)
        self.assertFalse(r.ok)
        self.assertNothingLeft(marker)

    def test_cancel_mid_tool(self) -> None:
        # fake-pi prints the tool start, starts `bash -c 'sleep 300; echo done'` in its own session
        # (with a `sleep 300` below it), then hangs until a signal, as real pi would while the tool runs.
        env, marker = self.world("recorded/sigterm_mid_tool.pi87.cassette.jsonl")
        seen = {"tool_start": False, "child": False}

        def on_event(event: dict, run: PiRun) -> None:
            if event.get("type") != "tool_execution_start" or seen["tool_start"]:
                return
            seen["tool_start"] = True
            # The tool's process exists (it carries the marker) before we cancel: the check below
            # then proves the cancel took it down, not that it never ran.
            seen["child"] = wait_for_leftover(marker, re.compile(r"^leftover: \d+ sleep 300 ", re.M))  # the grandchild: both are up
            run.cancel()

        r = PiRun("Run it.", "fake", "fake-model", env=env).run(on_event=on_event, timeout=RUN_TIMEOUT)
        self.assertTrue(seen["tool_start"])
        self.assertTrue(seen["child"], "the tool process never showed up")
        self.assertTrue(r.cancelled)
        self.assertFalse(r.timed_out)
        self.assertEqual(r.exit_code, 143, f"pi: code {r.exit_code} signal {r.signal}\n{r.stderr}")
        self.assertFalse(r.completed)
        self.assertFalse(r.ok)
        self.assertEqual(r.tool_calls, [{"id": "call_9", "name": "bash", "args": {"command": "sleep 300; echo done"}}])
        self.assertNothingLeft(marker)


def wait_for_leftover(marker: str, pattern: re.Pattern[str], within: float = 10.0) -> bool:
    """Polls `pi-harness leftovers --marker` until a marked process matches pattern (True) or time is up."""
    deadline = time.monotonic() + within
    while True:
        code, report = leftovers(marker)
        if code == 1 and pattern.search(report):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


if __name__ == "__main__":
    unittest.main()
