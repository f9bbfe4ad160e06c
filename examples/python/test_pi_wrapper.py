"""Tests of pi_wrapper against fake-pi (the pi-harness package) standing in for pi.

Needs the pi-harness wheel installed (``pip install dist/pi_harness-*.whl``, see the project's
README); run with ``python3 -m unittest`` in this directory. Each test takes a
``pi_harness.World``: fake-pi linked as ``pi`` first on a private PATH, a cassette from the
bundled corpus, a fresh agent dir, a unique marker, and at the end the proof that nothing the
test started is left (a leftover is killed and fails the test, named).
"""

from __future__ import annotations

import re
import time
import unittest

import pi_harness

from pi_wrapper import PiRun, run_pi

RUN_TIMEOUT = 20.0


class PiWrapperTest(unittest.TestCase):
    def world(self, cassette: str, speed: str = "0") -> tuple[dict[str, str], pi_harness.World]:
        """The environment for one pi run, and its world (closed, and checked, at the test's end)."""
        w = pi_harness.World(cassette, speed=speed, name=self.id(), grace=2.0)
        self.addCleanup(w.close)
        return w.env, w

    def assertNothingLeft(self, w: pi_harness.World) -> None:
        w.check_none_left(grace=2.0)

    def test_text_answer(self) -> None:
        env, w = self.world("recorded/text_only.pi87")
        r = run_pi("Say hello.", "fake", "fake-model", env=env, timeout=RUN_TIMEOUT)
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.text, "Hello, world!")
        self.assertEqual(r.tool_calls, [])
        self.assertTrue(r.completed)
        self.assertEqual(r.stop_reason, "stop")
        self.assertIsNone(r.error)
        self.assertTrue(r.ok)
        self.assertRegex(r.session_id or "", r"^[0-9a-f-]{36}$")
        self.assertNothingLeft(w)

    def test_tool_call_then_answer(self) -> None:
        env, w = self.world("recorded/tool_bash.pi87")
        r = run_pi("List the files.", "fake", "fake-model", env=env, timeout=RUN_TIMEOUT)
        self.assertEqual(r.exit_code, 0, r.stderr)
        self.assertEqual(r.tool_calls, [{"id": "call_1", "name": "bash", "args": {"command": "echo hi; ls"}}])
        self.assertEqual(r.text, "I'll list the files.The directory has a server.")
        self.assertTrue(r.ok)
        self.assertNothingLeft(w)

    def test_model_error_exit_0(self) -> None:
        env, w = self.world("recorded/auth_401.pi87")
        r = run_pi("Say something.", "fake", "fake-model", env=env, timeout=RUN_TIMEOUT)
        self.assertEqual(r.exit_code, 0, r.stderr)  # pi exits 0 ...
        self.assertTrue(r.completed)
        self.assertEqual(r.stop_reason, "error")  # ... but the run failed
        self.assertIn("invalid api key", r.error or "")
        self.assertEqual(r.text, "")
        self.assertFalse(r.ok)
        self.assertNothingLeft(w)

    def test_call_not_matching_the_recording(self) -> None:
        env, w = self.world("recorded/text_only.pi87")
        r = run_pi("Say hello.", "fake", "other-model", env=env, timeout=RUN_TIMEOUT)
        self.assertEqual(r.exit_code, 99)  # fake-pi: the call does not mean what the recording meant
        self.assertRegex(r.stderr, r"expectation mismatch: expect\.effective\.model")
        self.assertFalse(r.ok)
        self.assertNothingLeft(w)

    def test_stalled_run_times_out(self) -> None:
        # pi stays alive and silent mid-answer (a provider that stalls); only the caller's timeout ends it.
        env, w = self.world("faults/hang_after_output.pi87")
        started = time.monotonic()
        r = run_pi("list files", "fake", "fake-model", env=env, timeout=0.5)
        self.assertLess(time.monotonic() - started, 10, "the timeout did not end the run")
        self.assertTrue(r.timed_out)
        self.assertTrue(r.cancelled)
        self.assertEqual(r.exit_code, 143, f"pi: code {r.exit_code} signal {r.signal}\n{r.stderr}")
        self.assertEqual(r.text, "I'll list the files.")
        self.assertFalse(r.completed)
        self.assertFalse(r.ok)
        self.assertNothingLeft(w)

    def test_cancel_mid_tool(self) -> None:
        # fake-pi prints the tool start, starts `bash -c 'sleep 300; echo done'` in its own session
        # (with a `sleep 300` below it), then hangs until a signal, as real pi would while the tool runs.
        env, w = self.world("recorded/sigterm_mid_tool.pi87")
        seen = {"tool_start": False, "child": False}

        def on_event(event: dict, run: PiRun) -> None:
            if event.get("type") != "tool_execution_start" or seen["tool_start"]:
                return
            seen["tool_start"] = True
            # The tool's process exists (it carries the marker) before we cancel: the check below
            # then proves the cancel took it down, not that it never ran.
            seen["child"] = wait_for(w, re.compile(r"^sleep 300$"))  # the grandchild: both are up
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
        self.assertNothingLeft(w)


def wait_for(w: pi_harness.World, pattern: re.Pattern[str], within: float = 10.0) -> bool:
    """Polls the world's live processes until one's command line matches pattern (True) or time is up."""
    deadline = time.monotonic() + within
    while True:
        if any(pattern.search(p.cmdline) for p in w.alive()):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


if __name__ == "__main__":
    unittest.main()
