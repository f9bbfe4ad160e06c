"""The package's own tests: they use only the installed wheel (pi_harness and the binaries it
put on the venv's PATH), never the source tree."""

import pytest

pytest_plugins = ["pytester"]


@pytest.fixture
def wrapper_source() -> str:
    """A minimal wrapper, as a user would write one: `pi --mode json` found on PATH, the
    assistant's text deltas joined, fake-pi's exit status kept."""
    return '''
import json, subprocess

def ask(prompt, model="fake-model"):
    p = subprocess.run(["pi", "--mode", "json", "--provider", "fake", "--model", model, prompt],
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    text = ""
    for line in p.stdout.splitlines():
        e = json.loads(line)
        d = e.get("assistantMessageEvent") or {}
        if e.get("type") == "message_update" and d.get("type") == "text_delta":
            text += d["delta"]
    return p.returncode, text
'''
