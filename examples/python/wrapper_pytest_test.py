"""pi_wrapper under pytest: the pi_world fixture of the pi-harness package (its plugin loads
itself once the wheel is installed). ``python -m pytest`` in this directory runs these and the
unittest tests beside them."""

import pytest

from pi_wrapper import run_pi


@pytest.mark.pi_cassette("recorded/text_only.pi87")
def test_text_answer(pi_world):
    r = run_pi("Say hello.", "fake", "fake-model", timeout=20)
    assert (r.ok, r.text) == (True, "Hello, world!")


@pytest.mark.pi_cassette("recorded/tool_bash.pi87")
def test_tool_call_then_answer(pi_world):
    r = run_pi("List the files.", "fake", "fake-model", timeout=20)
    assert r.tool_calls == [{"id": "call_1", "name": "bash", "args": {"command": "echo hi; ls"}}]


@pytest.mark.parametrize("pi_world", ["recorded/auth_401.pi73", "recorded/auth_401.pi87"], indirect=True)
def test_model_error_on_every_recorded_version(pi_world):
    r = run_pi("Say something.", "fake", "fake-model", timeout=20)
    assert (r.exit_code, r.ok, r.stop_reason) == (0, False, "error")
