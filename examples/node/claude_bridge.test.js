// Tests of claude_bridge.js against fake-pi (from pi-harness) standing in for Claude Code on
// PATH, replaying sessions recorded from the real CLI. Needs `fake-pi` and `pi-harness` on
// PATH; run with `node --test`.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { execFile, execFileSync } = require('node:child_process');
const { promisify } = require('node:util');

const { runClaude } = require('./claude_bridge.js');

const execFileP = promisify(execFile);

function onPath(name) {
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir || '.', name);
    try { fs.accessSync(p, fs.constants.X_OK); return p; } catch { /* next */ }
  }
  throw new Error(`${name} not found on PATH (cargo install --git <pi-harness repo> fake-pi pi-harness)`);
}

let tmp;      // everything this file creates, removed at the end
let binDir;   // holds `claude`, a link to fake-pi (never a directory where a real claude lives)
let corpus;   // the cassettes exported from pi-harness

test.before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'claude-bridge-node-'));
  binDir = path.join(tmp, 'bin');
  fs.mkdirSync(binDir);
  fs.symlinkSync(onPath('fake-pi'), path.join(binDir, 'claude'));
  corpus = path.join(tmp, 'corpus');
  execFileSync('pi-harness', ['corpus', 'export', corpus], { stdio: ['ignore', 'ignore', 'pipe'] });
});

const markers = [];
test.afterEach(async () => {
  while (markers.length) await leftovers(markers.pop(), { kill: true });
});

test.after(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** The environment for one CLI run: fake-pi as `claude` first on PATH, a cassette, a marker. */
function world(name) {
  const dir = path.join(corpus, 'cassettes', 'claude');
  const file = fs.readdirSync(dir).find((f) => f.startsWith(`${name}.`));
  assert.ok(file, `no Claude cassette ${name} in ${dir}`);
  const marker = `claude-bridge-node-${process.pid}-${crypto.randomUUID()}`;
  markers.push(marker);
  const env = {
    ...process.env,
    PATH: binDir + path.delimiter + process.env.PATH,
    FAKE_PI_CASSETTE: path.join(dir, file),
    FAKE_PI_SPEED: '0',
    ANTHROPIC_API_KEY: 'sk-test-not-a-key',
    PI_HARNESS_TEST_MARKER: marker,
  };
  return { env, marker, cwd: fs.mkdtempSync(path.join(tmp, 'work-')) };
}

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
  const { env, marker, cwd } = world('claude_text');
  const r = await runClaude({ prompt: 'say hi', env, cwd });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.text, 'Hello there.');
  assert.equal(r.result.subtype, 'success');
  assert.equal(r.result.is_error, false);
  await assertNothingLeft(marker);
});

test('the bridge denies the tool and the model answers (the bridge pattern)', { timeout: 30000 }, async () => {
  const { env, marker, cwd } = world('claude_tool_denied');
  const r = await runClaude({
    prompt: 'touch x',
    env,
    cwd,
    canUseTool: async () => ({ behavior: 'deny', message: 'The host runs no tools' }),
  });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.deepEqual(r.toolCalls, [{ id: 'toolu_01', name: 'Bash', input: { command: 'touch x' } }]);
  assert.equal(r.permissions.length, 1);
  assert.equal(r.permissions[0].tool, 'Bash');
  assert.equal(r.text, 'Touching.It was denied.');
  assert.deepEqual(r.result.permission_denials.map((d) => d.tool_name), ['Bash']);
  await assertNothingLeft(marker);
});

test('allowing where the recording denied: fake-pi exits 99 and says which line', { timeout: 30000 }, async () => {
  const { env, marker, cwd } = world('claude_tool_denied');
  const r = await runClaude({
    prompt: 'touch x',
    env,
    cwd,
    canUseTool: async (req) => ({ behavior: 'allow', updatedInput: req.input }),
  });
  assert.equal(r.exitCode, 99);
  assert.match(r.stderr, /client mismatch: .*field `response`: expected \{.*"behavior":"deny"/);
  await assertNothingLeft(marker);
});

test('an API error: the turn fails and the CLI exits 1', { timeout: 30000 }, async () => {
  const { env, marker, cwd } = world('claude_api_error');
  const r = await runClaude({ prompt: 'hi', env, cwd });
  assert.equal(r.exitCode, 1, r.stderr);
  assert.equal(r.result.is_error, true);
  assert.match(r.result.result, /^API Error: 500 upstream boom/);
  assert.equal(r.text, '');
  await assertNothingLeft(marker);
});

test('the tool runs after the bridge allows it, and nothing is left', { timeout: 30000 }, async () => {
  const { env, marker, cwd } = world('claude_tool_allowed');
  const r = await runClaude({
    prompt: 'touch x',
    env,
    cwd,
    canUseTool: async (req) => ({ behavior: 'allow', updatedInput: req.input }),
  });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.text, 'Touching.Done.');
  assert.deepEqual(r.permissions.map((p) => p.decision.behavior), ['allow']);
  await assertNothingLeft(marker);
});
