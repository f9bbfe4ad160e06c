// Tests of gemini_wrapper.js against fake-pi (the pi-harness npm package) standing in for Gemini
// CLI. Needs the pi-harness packages installed beside this file (npm install of the two tarballs
// scripts/build-packages.sh builds, see the project's README); run with `node --test`.
// Each test takes a world (piWorld) on a Gemini CLI cassette of the bundled corpus (recorded from
// real Gemini CLI 0.61.0): fake-pi linked as `gemini` first on a private PATH, GEMINI_CLI_HOME an
// empty dir of its own, a unique marker, and when the test ends the proof that nothing it
// started is left.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { piWorld } = require('pi-harness');

const { startGemini, runGemini } = require('./gemini_wrapper.js');

const RUN_TIMEOUT_MS = 20000;
const MODEL = 'gemini-2.5-flash';

/** The environment for one gemini run (the recording's key set), and its world. */
function world(t, cassette) {
  const w = piWorld(t, { cassette, grace: 2000 });
  assert.equal(w.agent, 'gemini');
  // A short bound on what fake-pi leaves orphaned, as the real CLI leaves its tools: the
  // wrapper must take them down itself well before it.
  return { env: { ...w.env, GEMINI_API_KEY: 'test-key-for-gemini', FAKE_PI_GEMINI_ORPHAN_MS: '8000' }, w };
}

test('text answer: the chunks joined, result success, exit 0', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'gemini/gemini_text.gm061');
  const r = await runGemini({ model: MODEL, approvalMode: 'yolo', prompt: 'Say hello.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.text, 'Hello from the scripted model.');
  assert.deepEqual(r.tools, []);
  assert.equal(r.completed, true);
  assert.equal(r.error, null);
  assert.equal(r.stats.output_tokens, 3);
  assert.equal(r.ok, true);
  await w.checkNoneLeft(2000);
});

test('a tool, then the answer', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'gemini/gemini_tool.gm061');
  const r = await runGemini({ model: MODEL, approvalMode: 'yolo', prompt: 'Run the echo.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.tools.length, 1);
  assert.equal(r.tools[0].name, 'run_shell_command');
  assert.equal(r.tools[0].status, 'success');
  assert.match(r.tools[0].output, /hi-from-gemini/);
  assert.equal(r.text, 'Running it.The tool said hi.');
  assert.equal(r.ok, true);
  await w.checkNoneLeft(2000);
});

test('model error: exit 144 (HTTP 400 & 255), the result says error', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'gemini/gemini_model_error.gm061');
  const r = await runGemini({ model: MODEL, approvalMode: 'yolo', prompt: 'Say hello.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 144, r.stderr);
  assert.equal(r.completed, false);
  assert.match(r.error, /the scripted server refuses this request/);
  assert.equal(r.ok, false);
  await w.checkNoneLeft(2000);
});

test('a call the recording does not match: fake-pi exits 99 and says why', { timeout: 30000 }, async (t) => {
  const { env, w } = world(t, 'gemini/gemini_text.gm061');
  const r = await runGemini({ model: 'gemini-2.5-pro', approvalMode: 'yolo', prompt: 'Say hello.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 99);
  assert.match(r.stderr, /expect\.effective\.model: expected "gemini-2\.5-flash", got "gemini-2\.5-pro"/);
  assert.equal(r.ok, false);
  await w.checkNoneLeft(2000);
});

test('cancel mid-tool: SIGTERM to the group, exit 0 without a result, the orphaned tool taken down', { timeout: 30000 }, async (t) => {
  // fake-pi prints the tool's start, starts the tool's shell in a session of its own, then
  // waits, as Gemini CLI does while the tool runs; the group signal leaves that shell running.
  const { env, w } = world(t, 'gemini/gemini_sigterm_group_mid_tool.gm061');
  let toolSeen = null;
  const run = startGemini({
    model: MODEL, approvalMode: 'yolo', prompt: 'Run it.', env, timeoutMs: RUN_TIMEOUT_MS,
    onEvent: (event, handle) => {
      if (event.type !== 'tool_use' || toolSeen !== null) return;
      toolSeen = false;
      // The tool's processes exist before we cancel: the check below then proves the cancel
      // took them down, not that they never ran.
      waitFor(w, /bgpids\.tmp/)
        .then((seen) => { toolSeen = seen; })
        .finally(() => handle.cancel());
    },
  });
  const r = await run.result;
  assert.equal(toolSeen, true, 'the tool never showed up');
  assert.equal(r.cancelled, true);
  assert.equal(r.exitCode, 0, `gemini: code ${r.exitCode} signal ${r.signal}\n${r.stderr}`);
  assert.equal(r.completed, false);
  assert.equal(r.ok, false);
  assert.deepEqual(r.tools.map((x) => x.name), ['run_shell_command']);
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
