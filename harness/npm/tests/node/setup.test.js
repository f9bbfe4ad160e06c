// What issue 44 asked of the Node helper, as a new user meets it (installed from the tarballs by
// scripts/test-packages.sh): the cassette sets up its CLI (no key, no config of the wrapper's),
// one name form everywhere with "did you mean", a cassette named after the test, defaults per
// module (piWorld.configure), fields ignored at test time, an unused cassette failing the test,
// the mismatch's next step in the diagnostics, and the agents index.d.ts names being the
// registry's.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync, execFileSync } = require('node:child_process');

const harness = require('pi-harness');
const { piWorld, PiWorld, binaries, AGENTS, caseName, resolveCassette } = harness;
const { askCodex } = require('./fixtures/codex_wrapper.js');

const here = __dirname;

/** A wrapper's minimal call per agent: no key, no model or config where the home gives them. */
const CALLS = {
  'recorded/text_only.pi87': { argv: ['pi', '--mode', 'json', 'Say hello.'] },
  'codex/codex_text.cx0169': { argv: ['codex', 'exec', '--json', '--skip-git-repo-check', 'Say hello.'] },
  'gemini/gemini_text.gm061': {
    argv: ['gemini', '--model', 'gemini-2.5-flash', '--output-format', 'stream-json', '--yolo', '--prompt', 'Say hello.'],
  },
  'claude/claude_text.cc21330': {
    argv: ['claude', '--include-partial-messages', '--input-format', 'stream-json', '--output-format', 'stream-json',
      '--permission-prompt-tool', 'stdio', '--print', '--verbose'],
    input: '{"message":{"content":"say hi","role":"user"},"parent_tool_use_id":null,"session_id":"","type":"user"}\n',
  },
};

function call(world, name) {
  const { argv, input } = CALLS[name];
  return spawnSync(argv[0], argv.slice(1), { env: world.env, input: input || '', encoding: 'utf8', timeout: 30000 });
}

/** This environment with `extra`, without the variable that tells node:test it runs inside a test. */
function envWith(extra) {
  const env = { ...process.env, NO_COLOR: '1', ...extra };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

/** `node --test FILE` in a process of its own; its output and status. */
function nodeTest(file, env = {}) {
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', path.join(here, 'fixtures', file)], {
    env: envWith(env), encoding: 'utf8', timeout: 60000,
  });
  return { status: r.status, output: r.stdout + r.stderr };
}

for (const name of Object.keys(CALLS)) {
  test(`the cassette sets up its CLI: ${name}`, async (t) => {
    const w = piWorld(t, name);
    const r = call(w, name);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(w.report(), []);
    const spec = AGENTS[w.agent];
    const described = w.describe();
    if (spec.apiKeyVar) assert.match(described, new RegExp(`^${spec.apiKeyVar}=.* \\(from the cassette: the call needs it set\\)$`, 'm'));
    if (spec.homeVar) assert.ok(described.includes(`${spec.homeVar}=${w.agentDir} (the world's, holding `), described);
    // Without what the cassette set up (the test's own empty home, an empty key), the same call
    // is refused: the setup is what made it pass.
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'pih-empty-'));
    t.after(() => fs.rmSync(empty, { recursive: true, force: true }));
    const own = {};
    if (spec.apiKeyVar) own[spec.apiKeyVar] = '';
    if (spec.homeVar) own[spec.homeVar] = empty;
    const bare = new PiWorld({ cassette: name, env: own });
    try {
      assert.notEqual(call(bare, name).status, 0, `${name} passes without its setup too`);
      assert.equal(bare.describe().split('\n').filter((l) => l.endsWith("(the test's own)")).length, Object.keys(own).length);
    } finally {
      await bare.close();
    }
  });
}

test('a wrapper with its own config and another model still fails, one line and the next step', async (t) => {
  const own = fs.mkdtempSync(path.join(os.tmpdir(), 'pih-codex-home-'));
  t.after(() => fs.rmSync(own, { recursive: true, force: true }));
  fs.writeFileSync(path.join(own, 'config.toml'), 'model = "o3"\nmodel_provider = "openai"\n');
  const w = piWorld(t, { cassette: 'codex/codex_text.cx0169', env: { CODEX_HOME: own } });
  const r = askCodex({ env: w.env });
  assert.equal(r.code, 99, r.stderr);
  const [mismatch, next, ...rest] = w.mismatches();
  assert.deepEqual(rest, []);
  assert.match(mismatch, /^fake-pi: expectation mismatch: expect\.effective\.model: expected "gpt-5\.5", got "o3"/);
  assert.match(next, /^fake-pi: next: .*record mode all.*FAKE_PI_IGNORE=model/);
  assert.equal(fs.readFileSync(path.join(own, 'config.toml'), 'utf8'), 'model = "o3"\nmodel_provider = "openai"\n');
});

test('ignore passes a field that differs, without rewriting the cassette', (t) => {
  const w = piWorld(t, { cassette: 'codex/codex_text.cx0169', ignore: ['model'] });
  const before = fs.readFileSync(w.cassette);
  const r = askCodex({ model: 'o3', env: w.env });
  assert.equal(r.code, 0, r.stderr);
  assert.ok(w.describe().includes('FAKE_PI_IGNORE=model (not compared at replay)'));
  assert.deepEqual(fs.readFileSync(w.cassette), before);
});

test("node --test: a mismatch's next step is in the diagnostics", () => {
  const r = nodeTest('mismatch.js');
  assert.notEqual(r.status, 0, r.output);
  assert.match(r.output, /[#ℹ] fake-pi: next: if the new call is right, record the cassette again \(record mode all: .*FAKE_PI_IGNORE=model/);
});

test('every name form is one cassette, and a typo gets "did you mean"', () => {
  const listed = execFileSync(binaries().piHarness, ['corpus', 'list'], { encoding: 'utf8' }).split('\n');
  const line = listed.find((l) => l.startsWith('cassettes/codex/codex_text.'));
  const cwd = process.cwd();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pih-names-'));
  process.chdir(dir);
  try {
    for (const form of [line, `./${line}`, 'codex/codex_text.cx0169', 'codex/codex_text.cx0169.cassette.jsonl']) {
      assert.equal(caseName(form), 'codex/codex_text.cx0169');
      assert.equal(path.basename(resolveCassette(form)), 'codex_text.cx0169.cassette.jsonl', form);
    }
    assert.throws(() => new PiWorld('codex/codex_txt.cx0169'), {
      name: 'CassetteNotFoundError',
      message: /^no cassette 'codex\/codex_txt\.cx0169': [^\n]*; did you mean codex\/codex_text\.cx0169\?$/,
    });
  } finally {
    process.chdir(cwd);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('node --test: a test without a cassette gets the one named after it, under cassetteDir', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pih-default-'));
  try {
    fs.mkdirSync(path.join(dir, 'default_name'));
    fs.copyFileSync(resolveCassette('codex/codex_text.cx0169'), path.join(dir, 'default_name', 'uses-the-default-name.cassette.jsonl'));
    const r = nodeTest('default_name.js', { CASSETTE_DIR: dir });
    assert.match(r.output, /[#ℹ] pass 1\n[#ℹ] fail 1/, r.output);
    assert.match(r.output, /✔ uses the default name/);
    assert.ok(r.output.includes(`no cassette '${path.join(dir, 'default_name', 'has-no-cassette')}'`), r.output);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('node --test: piWorld.configure gives every test of a module its defaults', () => {
  const r = nodeTest('configured.js');
  assert.match(r.output, /[#ℹ] pass 2\n[#ℹ] fail 1/, r.output);
  assert.match(r.output, /✖ another model, without the defaults/);
  assert.match(r.output, /✔ another model, ignored by the defaults/);
});

test('node --test: an unused cassette fails its test, naming it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pih-runs-'));
  try {
    for (const n of ['1-first', '2-second']) {
      fs.copyFileSync(resolveCassette('codex/codex_text.cx0169'), path.join(dir, `${n}.cassette.jsonl`));
    }
    const r = nodeTest('unused.js', { RUNS: dir });
    assert.match(r.output, /[#ℹ] pass 1\n[#ℹ] fail 2/, r.output);
    assert.match(r.output, /UnusedCassetteError\]?: cassette \S+codex_text\.cx0169\.cassette\.jsonl was never replayed: the test's code never ran the CLI \(say allowUnused: true if that is expected\)/);
    assert.ok(r.output.includes(`cassette ${dir} was replayed in part: 1 of 2 runs; never played: 2-second.cassette.jsonl`), r.output);
    assert.match(r.output, /✔ may not call/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('index.d.ts and the helper name every agent of the registry and its variables', () => {
  const rows = JSON.parse(execFileSync(binaries().piHarness, ['agents', '--json'], { encoding: 'utf8' }));
  assert.deepEqual(rows.map((r) => r.name), Object.keys(AGENTS), 'an agent of the registry the helper does not name');
  const dts = fs.readFileSync(require.resolve('pi-harness/index.d.ts'), 'utf8');
  const union = dts.match(/^export type Agent = ([^;]+);$/m);
  assert.ok(union, 'index.d.ts has no Agent type');
  assert.deepEqual(union[1].split('|').map((s) => s.trim().replace(/'/g, '')), rows.map((r) => r.name));
  for (const r of rows) {
    const mine = AGENTS[r.name];
    assert.deepEqual([mine.displayName, mine.homeVar, mine.apiKeyVar], [r.display_name, r.home_var, r.api_key_var]);
    for (const v of [r.home_var, r.api_key_var].filter(Boolean)) {
      assert.match(dts, new RegExp(`^  ${v}\\??: string;$`, 'm'), `index.d.ts's WorldVariables does not name ${v}`);
    }
  }
});

test('recordMode once records with the agent given (Codex here), Claude Code refused in one line', async (t) => {
  // Before: every agent but pi was refused, and a world without `agent` put `pi` on PATH.
  const savedCi = process.env.CI;
  delete process.env.CI;
  t.after(() => { if (savedCi !== undefined) process.env.CI = savedCi; });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pih-rec-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'hello.llm.json'), '{"turns": [{"text": ["Hi"]}]}');
  const w = new PiWorld({ cassette: path.join(dir, 'hello'), recordMode: 'once', agent: 'codex', realPi: '/nonexistent/codex' });
  try {
    assert.deepEqual([w.agent, path.basename(w.agentPath)], ['codex', 'codex']);
    const shim = fs.readFileSync(w.agentPath, 'utf8');
    assert.ok(shim.includes("'record' '--agent' 'codex' '--record-mode' 'once'"), shim);
    assert.ok(shim.includes("'--pi' '/nonexistent/codex'"), shim);
    const r = askCodex({ env: w.env });
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes('/nonexistent/codex'), r.stderr);
  } finally {
    await w.close();
  }
  assert.ok(!fs.existsSync(path.join(dir, 'hello.cassette.jsonl')));
  assert.throws(() => new PiWorld({ cassette: path.join(dir, 'hello'), recordMode: 'once', agent: 'claude', realPi: '/x' }), {
    message: /^recording Claude Code from a test's call is not supported/,
  });
});

test('recordMode once records a Codex cassette with real Codex, then replays it', { skip: !process.env.PI_HARNESS_REAL_CODEX && 'PI_HARNESS_REAL_CODEX not set' }, async (t) => {
  const savedCi = process.env.CI;
  delete process.env.CI;
  t.after(() => { if (savedCi !== undefined) process.env.CI = savedCi; });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pih-rec-codex-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'hello.llm.json'), '{"turns": [{"text": ["Hi ", "there."]}]}');
  for (const mode of ['once', 'none']) {
    const w = new PiWorld({ cassette: path.join(dir, 'hello'), recordMode: mode, agent: 'codex', allowUnused: false });
    try {
      const r = spawnSync('codex', ['exec', '--json', '--skip-git-repo-check', 'Say hello.'],
        { env: w.env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000 });
      assert.equal(r.status, 0, `${mode}: ${r.stderr}`);
      assert.match(r.stdout, /"text":"Hi there\."/);
    } finally {
      await w.close();
    }
  }
  assert.ok(fs.existsSync(path.join(dir, 'hello.cassette.jsonl')));
});
