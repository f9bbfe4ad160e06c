"""A tiny wrapper around the pi coding agent CLI in JSON mode, as an integrator would write it.

Spawns ``pi --mode json --provider P --model M PROMPT`` (pi found on PATH), reads its JSONL
stdout line by line, collects the assistant's text and the tool calls, tells a finished run from
a failed one, and cancels with SIGTERM. Standard library only.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional


@dataclass
class PiResult:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "args"}
    completed: bool = False  # agent_end seen
    stop_reason: Optional[str] = None  # of the last assistant message
    error: Optional[str] = None  # its errorMessage when stop_reason == "error"
    exit_code: Optional[int] = None  # None when pi died by a signal
    signal: Optional[int] = None
    cancelled: bool = False
    timed_out: bool = False
    stderr: str = ""
    session_id: Optional[str] = None

    @property
    def ok(self) -> bool:
        # pi exits 0 also when the model call failed: the run is a success only when it reached
        # agent_end and the last assistant message did not stop on an error or an abort.
        return (
            self.exit_code == 0
            and self.completed
            and not self.cancelled
            and self.stop_reason not in ("error", "aborted")
        )


class PiRun:
    """One pi process. Iterate ``run()`` or call it with ``on_event``; ``cancel()`` from anywhere."""

    def __init__(
        self,
        prompt: str,
        provider: Optional[str] = None,
        model: Optional[str] = None,
        *,
        pi: str = "pi",
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        grace: float = 5.0,
    ) -> None:
        args = [pi, "--mode", "json"]
        if provider:
            args += ["--provider", provider]
        if model:
            args += ["--model", model]
        args.append(prompt)
        self.grace = grace
        self.result = PiResult()
        self._lock = threading.Lock()
        # stdin must not stay open: pi reads it to EOF before it starts when it is not a terminal.
        # With env given, pi is looked up on env["PATH"].
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
        self._stderr: list[bytes] = []
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for chunk in iter(lambda: self.proc.stderr.read(65536), b""):
            self._stderr.append(chunk)

    def cancel(self) -> None:
        """SIGTERM to pi (pi >= 0.87 kills its tool processes and exits 143); SIGKILL after grace."""
        with self._lock:
            if self.result.cancelled or self.proc.poll() is not None:
                return
            self.result.cancelled = True
            self.proc.send_signal(signal.SIGTERM)
        killer = threading.Timer(self.grace, self._kill_if_alive)
        killer.daemon = True
        killer.start()

    def _kill_if_alive(self) -> None:
        with self._lock:
            if self.proc.poll() is None:
                self.proc.kill()

    def run(
        self,
        on_event: Optional[Callable[[dict[str, Any], "PiRun"], None]] = None,
        timeout: Optional[float] = None,
    ) -> PiResult:
        """Read pi's events to the end, wait for pi to exit and return the outcome.

        ``timeout``: seconds, after which the run is cancelled (``timed_out`` is then set).
        """
        timer = None
        if timeout is not None:
            timer = threading.Timer(timeout, self._time_out)
            timer.daemon = True
            timer.start()
        try:
            assert self.proc.stdout is not None
            for raw in self.proc.stdout:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue  # pi may print a line that is not JSON; skip it
                if not isinstance(event, dict):
                    continue
                self._handle(event)
                if on_event is not None:
                    on_event(event, self)
            self.proc.wait()
        finally:
            if timer is not None:
                timer.cancel()
            if self.proc.poll() is None:  # on_event raised: do not leave pi behind
                self.cancel()
                self.proc.wait()
        self._stderr_reader.join()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        r = self.result
        code = self.proc.returncode
        r.exit_code, r.signal = (code, None) if code >= 0 else (None, -code)
        r.stderr = b"".join(self._stderr).decode("utf-8", "replace")
        return r

    def _time_out(self) -> None:
        self.result.timed_out = True
        self.cancel()

    def _handle(self, event: dict[str, Any]) -> None:
        r = self.result
        kind = event.get("type")
        if kind == "session":
            r.session_id = event.get("id")
        elif kind == "message_update":
            e = event.get("assistantMessageEvent") or {}
            if e.get("type") == "text_delta" and isinstance(e.get("delta"), str):
                r.text += e["delta"]
        elif kind == "tool_execution_start":
            r.tool_calls.append(
                {"id": event.get("toolCallId"), "name": event.get("toolName"), "args": event.get("args")}
            )
        elif kind == "message_end":
            m = event.get("message") or {}
            if m.get("role") == "assistant":
                r.stop_reason = m.get("stopReason")
                r.error = (m.get("errorMessage") or "unknown error") if r.stop_reason == "error" else None
        elif kind == "agent_end":
            r.completed = True


def run_pi(prompt: str, provider: Optional[str] = None, model: Optional[str] = None, **kwargs: Any) -> PiResult:
    """Run pi to the end. kwargs: pi, env, cwd, grace (for PiRun), on_event, timeout (for run)."""
    run_kwargs = {k: kwargs.pop(k) for k in ("on_event", "timeout") if k in kwargs}
    return PiRun(prompt, provider, model, **kwargs).run(**run_kwargs)


if __name__ == "__main__":  # python3 pi_wrapper.py PROVIDER MODEL PROMPT
    import sys

    res = run_pi(sys.argv[3], sys.argv[1], sys.argv[2], on_event=None, timeout=600)
    print(res.text)
    for call in res.tool_calls:
        print(f"tool {call['name']} {json.dumps(call['args'])}", file=sys.stderr)
    if not res.ok:
        print(f"pi failed: exit {res.exit_code} signal {res.signal}: {res.error or res.stderr.strip()}", file=sys.stderr)
        sys.exit(1)
