// Tests of pi_wrapper.js against fake-pi (the pi-harness npm package) standing in for pi.
// Needs the pi-harness packages installed beside this file (npm install of the two tarballs
// scripts/build-packages.sh builds, see the project's README); run with `node --test`.
// Each test takes a world (piWorld): fake-pi linked as `pi` first on a private PATH, a cassette
// from the bundled corpus, a fresh agent dir, a unique marker, and when the test ends the proof
// that nothing it started is left (a leftover is killed and fails the test, named).
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { piWorld } = require('pi-harness');

const { startPi, runPi } = require('./pi_wrapper.js');

const RUN_TIMEOUT_MS = 20000;

/** The environment for one pi run, and its world (closed, and checked, when the test ends). */
function world(t, cassette, speed = '0') {
  const w = piWorld(t, { cassette, speed, grace: 2000 });
  return { env: w.env, w };
}

async function assertNothingLeft(w) {
  await w.checkNoneLeft(2000);
}

test('text answer', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'recorded/text_only.pi87');
  const r = await runPi({ provider: 'fake', model: 'fake-model', prompt: 'Say hello.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.text, 'Hello, world!');
  assert.deepEqual(r.toolCalls, []);
  assert.equal(r.completed, true);
  assert.equal(r.stopReason, 'stop');
  assert.equal(r.error, null);
  assert.equal(r.ok, true);
  assert.match(r.sessionId, /^[0-9a-f-]{36}$/);
  await assertNothingLeft(w);
});

test('tool call, then the answer', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'recorded/tool_bash.pi87');
  const r = await runPi({ provider: 'fake', model: 'fake-model', prompt: 'List the files.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.deepEqual(r.toolCalls, [{ id: 'call_1', name: 'bash', args: { command: 'echo hi; ls' } }]);
  assert.equal(r.text, "I'll list the files.The directory has a server.");
  assert.equal(r.ok, true);
  await assertNothingLeft(w);
});

test('model error: pi exits 0 but the run failed', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'recorded/auth_401.pi87');
  const r = await runPi({ provider: 'fake', model: 'fake-model', prompt: 'Say something.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.completed, true);
  assert.equal(r.stopReason, 'error');
  assert.match(r.error, /invalid api key/);
  assert.equal(r.text, '');
  assert.equal(r.ok, false);
  await assertNothingLeft(w);
});

test('a call the recording does not match: fake-pi exits 99 and says why', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'recorded/text_only.pi87');
  const r = await runPi({ provider: 'fake', model: 'other-model', prompt: 'Say hello.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 99);
  assert.match(r.stderr, /expectation mismatch: expect\.effective\.model/);
  assert.equal(r.ok, false);
  await assertNothingLeft(w);
});

test('a stalled run: the timeout cancels it', { timeout: 30000 }, async (t) => {
  // pi stays alive and silent mid-answer (a provider that stalls); only the caller's timeout ends it.
  const { env, w } = world(t, 'faults/hang_after_output.pi87');
  const started = Date.now();
  const r = await runPi({ provider: 'fake', model: 'fake-model', prompt: 'list files', env, timeoutMs: 500 });
  assert.ok(Date.now() - started < 10000, 'the timeout did not end the run');
  assert.equal(r.timedOut, true);
  assert.equal(r.cancelled, true);
  assert.equal(r.exitCode, 143, `pi: code ${r.exitCode} signal ${r.signal}\n${r.stderr}`);
  assert.equal(r.text, "I'll list the files.");
  assert.equal(r.completed, false);
  assert.equal(r.ok, false);
  await assertNothingLeft(w);
});

test('cancel mid-tool: SIGTERM, pi exits 143, nothing left running', { timeout: 30000 }, async (t) => {
  // fake-pi prints the tool start, starts `bash -c 'sleep 300; echo done'` in its own session
  // (with a `sleep 300` below it), then hangs until a signal, as real pi would while the tool runs.
  const { env, w } = world(t, 'recorded/sigterm_mid_tool.pi87');
  let sawToolStart = false;
  let childSeen = null;
  const run = startPi({
    provider: 'fake', model: 'fake-model', prompt: 'Run it.', env, timeoutMs: RUN_TIMEOUT_MS,
    onEvent: (event, handle) => {
      if (event.type !== 'tool_execution_start' || sawToolStart) return;
      sawToolStart = true;
      // The tool's process exists (it carries the marker) before we cancel: the check below
      // then proves the cancel took it down, not that it never ran.
      // Waits for the tool's grandchild (`sleep 300`): then both are up.
      waitFor(w, /^sleep 300$/)
        .then((seen) => { childSeen = seen; }, (err) => { childSeen = err; })
        .finally(() => handle.cancel());
    },
  });
  const r = await run.result;
  assert.equal(sawToolStart, true);
  assert.equal(childSeen, true, 'the tool process never showed up');
  assert.equal(r.cancelled, true);
  assert.equal(r.timedOut, false);
  assert.equal(r.exitCode, 143, `pi: code ${r.exitCode} signal ${r.signal}\n${r.stderr}`);
  assert.equal(r.completed, false);
  assert.equal(r.ok, false);
  assert.deepEqual(r.toolCalls, [{ id: 'call_9', name: 'bash', args: { command: 'sleep 300; echo done' } }]);
  await assertNothingLeft(w);
});

/** Polls the world's live processes until one's command line matches `pattern` (true) or 10 s pass (false). */
async function waitFor(w, pattern) {
  const deadline = Date.now() + 10000;
  for (;;) {
    if (w.alive().some((p) => pattern.test(p.cmdline))) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
