// Tests of codex_wrapper.js against fake-pi (the pi-harness npm package) standing in for Codex.
// Needs the pi-harness packages installed beside this file (npm install of the two tarballs
// scripts/build-packages.sh builds, see the project's README); run with `node --test`.
// Each test takes a world (piWorld) on a Codex cassette of the bundled corpus (recorded from real
// Codex 0.169.0): fake-pi linked as `codex` first on a private PATH, CODEX_HOME an empty dir of
// its own, a unique marker, and when the test ends the proof that nothing it started is left.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { piWorld } = require('pi-harness');

const { startCodex, runCodex } = require('./codex_wrapper.js');

const RUN_TIMEOUT_MS = 20000;

/** The environment for one codex run (the recording's provider key set), and its world. */
function world(t, cassette) {
  const w = piWorld(t, { cassette, grace: 2000 });
  assert.equal(w.agent, 'codex');
  return { env: { ...w.env, CODEX_API_KEY: 'sk-test' }, w };
}

test('text answer: one agent_message, turn.completed, exit 0', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'codex/codex_text.cx0169');
  const r = await runCodex({ model: 'gpt-5.5', prompt: 'Say hello.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.text, 'Hello from the scripted model.');
  assert.deepEqual(r.commands, []);
  assert.equal(r.completed, true);
  assert.equal(r.error, null);
  assert.equal(r.usage.output_tokens, 7);
  assert.equal(r.ok, true);
  assert.match(r.threadId, /^[0-9a-f-]{36}$/);
  await w.checkNoneLeft(2000);
});

test('a command, then the answer', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'codex/codex_tool.cx0169');
  const r = await runCodex({ model: 'gpt-5.5', prompt: 'Run the echo.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.deepEqual(r.commands, [{
    id: 'item_2', command: "/bin/bash -lc 'echo hi-from-codex-tool'", exitCode: 0, output: 'hi-from-codex-tool\n',
  }]);
  assert.equal(r.text, 'Running.The tool said hi.');
  assert.equal(r.ok, true);
  await w.checkNoneLeft(2000);
});

test('model error: turn.failed carries the body, exit 1', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'codex/codex_model_error.cx0169');
  const r = await runCodex({ model: 'gpt-5.5', prompt: 'Say hello.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 1, r.stderr);
  assert.equal(r.completed, false);
  assert.match(r.error, /the scripted server refuses this request/);
  assert.equal(r.ok, false);
  await w.checkNoneLeft(2000);
});

test('a call the recording does not match: fake-pi exits 99 and says why', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'codex/codex_text.cx0169');
  const r = await runCodex({ model: 'gpt-4.1', prompt: 'Say hello.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 99);
  assert.match(r.stderr, /expectation mismatch: expect\.effective\.model: expected "gpt-5\.5", got "gpt-4\.1"/);
  assert.equal(r.ok, false);
  await w.checkNoneLeft(2000);
});

test('cancel mid-command: SIGINT to the group, exit 1, the whole command tree gone', { timeout: 30000 }, async (t) => {
  // fake-pi prints the command's start, starts `bash -c 'sleep 300; echo done'` in its own
  // session (with a `sleep 300` below it), then waits, as real Codex does while the command runs.
  const { env, w } = world(t, 'codex/codex_sigint_mid_tool.cx0169');
  let sleepSeen = null;
  const run = startCodex({
    model: 'gpt-5.5', prompt: 'Run it.', env, timeoutMs: RUN_TIMEOUT_MS,
    onEvent: (event, handle) => {
      if (event.type !== 'item.started' || sleepSeen !== null) return;
      sleepSeen = false;
      // The command's processes exist before we cancel: the check below then proves the cancel
      // took them down, not that they never ran.
      waitFor(w, /^sleep 300$/)
        .then((seen) => { sleepSeen = seen; })
        .finally(() => handle.cancel());
    },
  });
  const r = await run.result;
  assert.equal(sleepSeen, true, 'the command never showed up');
  assert.equal(r.cancelled, true);
  assert.equal(r.exitCode, 1, `codex: code ${r.exitCode} signal ${r.signal}\n${r.stderr}`);
  assert.equal(r.completed, false);
  assert.equal(r.ok, false);
  assert.deepEqual(r.commands.map((c) => c.command), ["/bin/bash -lc 'sleep 300; echo done'"]);
  await w.checkNoneLeft(2000);
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
