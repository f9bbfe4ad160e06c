// Tests of pi_wrapper.js against fake-pi (from pi-harness) standing in for pi on PATH.
// Needs `fake-pi` and `pi-harness` on PATH; run with `node --test`.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { execFile, execFileSync } = require('node:child_process');
const { promisify } = require('node:util');

const { startPi, runPi } = require('./pi_wrapper.js');

const execFileP = promisify(execFile);
const RUN_TIMEOUT_MS = 20000;

function onPath(name) {
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir || '.', name);
    try { fs.accessSync(p, fs.constants.X_OK); return p; } catch { /* next */ }
  }
  throw new Error(`${name} not found on PATH (cargo install --git <pi-harness repo> fake-pi pi-harness)`);
}

let tmp;      // everything this file creates, removed at the end
let binDir;   // holds `pi`, a link to fake-pi
let corpus;   // the cassettes exported from pi-harness

test.before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'pi-wrapper-node-'));
  binDir = path.join(tmp, 'bin');
  fs.mkdirSync(binDir);
  fs.symlinkSync(onPath('fake-pi'), path.join(binDir, 'pi'));
  corpus = path.join(tmp, 'corpus');
  execFileSync('pi-harness', ['corpus', 'export', corpus], { stdio: ['ignore', 'ignore', 'pipe'] }); // throws with its stderr
});

const markers = [];
// Whatever a test asserted, no process of it outlives it (a failed assertion skips its own check).
test.afterEach(async () => {
  while (markers.length) await leftovers(markers.pop(), { kill: true });
});

test.after(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** The environment for one pi run: fake-pi first on PATH, a cassette, a fresh agent dir, a marker. */
function world(cassette, speed = '0') {
  const file = path.join(corpus, 'cassettes', cassette);
  assert.ok(fs.existsSync(file), `no cassette ${file}`);
  const marker = `pi-wrapper-node-${process.pid}-${crypto.randomUUID()}`;
  markers.push(marker);
  const env = {
    ...process.env,
    PATH: binDir + path.delimiter + process.env.PATH,
    FAKE_PI_CASSETTE: file,
    FAKE_PI_SPEED: speed,
    PI_CODING_AGENT_DIR: fs.mkdtempSync(path.join(tmp, 'agent-')),
    PI_HARNESS_TEST_MARKER: marker,
  };
  return { env, marker };
}

/**
 * Resolves to pi-harness leftovers' exit status (0: nothing carries the marker) and its report.
 * `grace`: how long marked processes get to go away (polled: no wait when none is left); a process
 * SIGKILLed by pi a moment ago is still in /proc until the kernel has run its exit.
 * `kill`: SIGKILL what is found.
 */
async function leftovers(marker, { grace = '0s', kill = false } = {}) {
  try {
    await execFileP('pi-harness', ['leftovers', '--marker', marker, '--grace', grace, ...(kill ? ['--kill'] : [])]);
    return { code: 0, report: '' };
  } catch (err) {
    if (typeof err.code !== 'number') throw err;
    return { code: err.code, report: String(err.stderr) };
  }
}

async function assertNothingLeft(marker) {
  const { code, report } = await leftovers(marker, { grace: '2s' });
  assert.equal(code, 0, `processes left behind:\n${report}`);
}

test('text answer', { timeout: 30000 }, async () => {
  const { env, marker } = world('recorded/text_only.pi87.cassette.jsonl');
  const r = await runPi({ provider: 'fake', model: 'fake-model', prompt: 'Say hello.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.text, 'Hello, world!');
  assert.deepEqual(r.toolCalls, []);
  assert.equal(r.completed, true);
  assert.equal(r.stopReason, 'stop');
  assert.equal(r.error, null);
  assert.equal(r.ok, true);
  assert.match(r.sessionId, /^[0-9a-f-]{36}$/);
  await assertNothingLeft(marker);
});

test('tool call, then the answer', { timeout: 30000 }, async () => {
  const { env, marker } = world('recorded/tool_bash.pi87.cassette.jsonl');
  const r = await runPi({ provider: 'fake', model: 'fake-model', prompt: 'List the files.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.deepEqual(r.toolCalls, [{ id: 'call_1', name: 'bash', args: { command: 'echo hi; ls' } }]);
  assert.equal(r.text, "I'll list the files.The directory has a server.");
  assert.equal(r.ok, true);
  await assertNothingLeft(marker);
});

test('model error: pi exits 0 but the run failed', { timeout: 30000 }, async () => {
  const { env, marker } = world('recorded/auth_401.pi87.cassette.jsonl');
  const r = await runPi({ provider: 'fake', model: 'fake-model', prompt: 'Say something.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.completed, true);
  assert.equal(r.stopReason, 'error');
  assert.match(r.error, /invalid api key/);
  assert.equal(r.text, '');
  assert.equal(r.ok, false);
  await assertNothingLeft(marker);
});

test('a call the recording does not match: fake-pi exits 99 and says why', { timeout: 30000 }, async () => {
  const { env, marker } = world('recorded/text_only.pi87.cassette.jsonl');
  const r = await runPi({ provider: 'fake', model: 'other-model', prompt: 'Say hello.', env, timeoutMs: RUN_TIMEOUT_MS });
  assert.equal(r.exitCode, 99);
  assert.match(r.stderr, /expectation mismatch: expect\.effective\.model/);
  assert.equal(r.ok, false);
  await assertNothingLeft(marker);
});

test('a stalled run: the timeout cancels it', { timeout: 30000 }, async () => {
  // pi stays alive and silent mid-answer (a provider that stalls); only the caller's timeout ends it.
  const { env, marker } = world('faults/hang_after_output.pi87.cassette.jsonl');
  const started = Date.now();
  const r = await runPi({ provider: 'fake', model: 'fake-model', prompt: 'list files', env, timeoutMs: 500 });
  assert.ok(Date.now() - started < 10000, 'the timeout did not end the run');
  assert.equal(r.timedOut, true);
  assert.equal(r.cancelled, true);
  assert.equal(r.exitCode, 143, `pi: code ${r.exitCode} signal ${r.signal}\n${r.stderr}`);
  assert.equal(r.text, "I'll list the files.");
  assert.equal(r.completed, false);
  assert.equal(r.ok, false);
  await assertNothingLeft(marker);
});

test('cancel mid-tool: SIGTERM, pi exits 143, nothing left running', { timeout: 30000 }, async () => {
  // fake-pi prints the tool start, starts `bash -c 'sleep 300; echo done'` in its own session
  // (with a `sleep 300` below it), then hangs until a signal, as real pi would while the tool runs.
  const { env, marker } = world('recorded/sigterm_mid_tool.pi87.cassette.jsonl');
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
      waitForLeftover(marker, /^leftover: \d+ sleep 300 /m)
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
  await assertNothingLeft(marker);
});

/** Polls `pi-harness leftovers --marker` until a marked process matches `pattern` (true) or 10 s pass (false). */
async function waitForLeftover(marker, pattern) {
  const deadline = Date.now() + 10000;
  for (;;) {
    const { code, report } = await leftovers(marker);
    if (code === 1 && pattern.test(report)) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
