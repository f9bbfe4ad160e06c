// Tests of claude_bridge.js against fake-pi (the pi-harness npm package) standing in for Claude
// Code, replaying sessions recorded from the real CLI. Needs the pi-harness packages installed
// beside this file; run with `node --test`. piWorld links fake-pi as `claude` (the cassette's
// header says it is a Claude Code session) in a private bin dir put first on PATH.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { piWorld, corpus } = require('pi-harness');

const { runClaude } = require('./claude_bridge.js');

/** The environment for one CLI run (fake-pi as `claude`, the cassette, a marker), and a work dir. */
function world(t, name) {
  const dir = path.join(corpus(), 'cassettes', 'claude');
  const file = fs.readdirSync(dir).find((f) => f.startsWith(`${name}.`));
  assert.ok(file, `no Claude cassette ${name} in ${dir}`);
  const w = piWorld(t, { cassette: path.join(dir, file), grace: 2000 });
  assert.equal(w.agent, 'claude');
  const cwd = path.join(w.path, 'work');
  fs.mkdirSync(cwd);
  return { env: { ...w.env, ANTHROPIC_API_KEY: 'sk-test-not-a-key' }, w, cwd };
}

async function assertNothingLeft(w) {
  await w.checkNoneLeft(2000);
}

test('text answer', { timeout: 30000 }, async (t) => {
  const { env, w, cwd } = world(t, 'claude_text');
  const r = await runClaude({ prompt: 'say hi', env, cwd });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.text, 'Hello there.');
  assert.equal(r.result.subtype, 'success');
  assert.equal(r.result.is_error, false);
  await assertNothingLeft(w);
});

test('the bridge denies the tool and the model answers (the bridge pattern)', { timeout: 30000 }, async (t) => {
  const { env, w, cwd } = world(t, 'claude_tool_denied');
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
  await assertNothingLeft(w);
});

test('allowing where the recording denied: fake-pi exits 99 and says which line', { timeout: 30000 }, async (t) => {
  const { env, w, cwd } = world(t, 'claude_tool_denied');
  const r = await runClaude({
    prompt: 'touch x',
    env,
    cwd,
    canUseTool: async (req) => ({ behavior: 'allow', updatedInput: req.input }),
  });
  assert.equal(r.exitCode, 99);
  assert.match(r.stderr, /client mismatch: .*field `response`: expected \{.*"behavior":"deny"/);
  await assertNothingLeft(w);
});

test('an API error: the turn fails and the CLI exits 1', { timeout: 30000 }, async (t) => {
  const { env, w, cwd } = world(t, 'claude_api_error');
  const r = await runClaude({ prompt: 'hi', env, cwd });
  assert.equal(r.exitCode, 1, r.stderr);
  assert.equal(r.result.is_error, true);
  assert.match(r.result.result, /^API Error: 500 upstream boom/);
  assert.equal(r.text, '');
  await assertNothingLeft(w);
});

test('the tool runs after the bridge allows it, and nothing is left', { timeout: 30000 }, async (t) => {
  const { env, w, cwd } = world(t, 'claude_tool_allowed');
  const r = await runClaude({
    prompt: 'touch x',
    env,
    cwd,
    canUseTool: async (req) => ({ behavior: 'allow', updatedInput: req.input }),
  });
  assert.equal(r.exitCode, 0, r.stderr);
  assert.equal(r.text, 'Touching.Done.');
  assert.deepEqual(r.permissions.map((p) => p.decision.behavior), ['allow']);
  await assertNothingLeft(w);
});
