// The pi-harness npm packages as a user meets them, installed from their tarballs into a fresh
// project (scripts/test-packages.sh copies these files there): only the installed packages
// are used, never the source tree.
'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { execFileSync, spawn, spawnSync } = require('node:child_process');

const harness = require('pi-harness');
const { piWorld, PiWorld, binaries, LeftoverError } = harness;
const { ask } = require('../wrapper.js');

const here = __dirname;
/** A sleep length no other process has: what a leftover line must name. */
const uniqueSecs = () => `${300 + Math.floor(Math.random() * 1000)}.${process.pid}`;

/** Live processes anywhere whose command line has the argument `arg`. */
function withArg(arg) {
  return fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).filter((pid) => {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      const state = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1][0];
      return argv.includes(arg) && state !== 'Z';
    } catch { return false; }
  });
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

test('with PI_HARNESS_HTML a wrapper that cancels too early writes the replay page, named in the failure', () => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'pih-html-'));
  try {
    const r = nodeTest('cancel_early.js', { PI_HARNESS_HTML: dir });
    assert.notEqual(r.status, 0, r.output);
    const named = r.output.match(/timeline: (\S+\.html)/);
    assert.ok(named, r.output);
    assert.equal(path.dirname(named[1]), dir);
    const html = fs.readFileSync(named[1], 'utf8');
    for (const shown of ['the replay, as it happened', 'fake-pi said', 'other-model', 'SIGINT received', 'left over', 'sleep 300']) {
      assert.ok(html.includes(shown), shown);
    }
    assert.match(r.output, /leftover: \d+ .*sleep 300/);
    // Unset: the same failure, no page.
    const again = nodeTest('cancel_early.js', { PI_HARNESS_HTML: '' });
    assert.notEqual(again.status, 0);
    assert.match(again.output, /leftover: \d+ .*sleep 300/);
    assert.doesNotMatch(again.output, /timeline: /);
    assert.deepEqual(fs.readdirSync(dir), [path.basename(named[1])]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('ten lines replay a bundled cassette through a wrapper', async (t) => {
  const w = piWorld(t, 'recorded/text_only.pi87');
  const r = await ask('Say hello.', { env: w.env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.text, 'Hello, world!');
});

test('zstd cassettes run under their agent\'s name', async (t) => {
  // The bundled long answer is zstd (what the recorder writes for a large run).
  const w = piWorld(t, { cassette: 'recorded/long_answer.pi73', allowUnused: true });
  assert.match(w.cassette, /\.cassette\.jsonl\.zst$/);
  assert.equal(w.agent, 'pi');
  const c = piWorld(t, { cassette: path.join(here, 'fixtures', 'claude_text.cc21330.cassette.jsonl.zst'), allowUnused: true });
  assert.equal(c.agent, 'claude');
  assert.equal(path.basename(c.agentPath), 'claude');
});

test('the pi the wrapper starts is the native fake-pi', async (t) => {
  const w = piWorld(t, 'faults/hang_after_output.pi87');
  const p = spawn('pi', ['--mode', 'json', '--provider', 'fake', '--model', 'fake-model', 'list files'], {
    env: w.env, stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise((resolve) => p.stdout.once('data', resolve));
  try {
    const exe = fs.readlinkSync(`/proc/${p.pid}/exe`);
    assert.equal(exe, binaries().fakePi);
    assert.equal(fs.realpathSync(w.agentPath), exe);
    assert.equal(fs.readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0')[0], 'pi');
  } finally {
    p.kill('SIGKILL');
    await new Promise((resolve) => p.once('close', resolve));
  }
});

test('the world: a private PATH, the cassette, instant replay, an empty agent dir, a marker', (t) => {
  const a = piWorld(t, { cassette: 'claude/claude_bridge_default.cc21332', allowUnused: true });
  const b = piWorld(t, { cassette: 'recorded/text_only.pi87', speed: 1, allowUnused: true });
  assert.equal(a.agent, 'claude');
  assert.equal(path.basename(a.agentPath), 'claude');
  assert.equal(b.agent, 'pi');
  assert.equal(a.env.PATH.split(path.delimiter)[0], a.binDir);
  assert.equal(a.env.FAKE_PI_CASSETTE, a.cassette);
  assert.equal(a.env.FAKE_PI_SPEED, '0');
  assert.equal(b.env.FAKE_PI_SPEED, '1');
  assert.deepEqual(fs.readdirSync(a.env.PI_CODING_AGENT_DIR), []);
  assert.equal(a.env.PI_HARNESS_TEST_MARKER, a.marker);
  assert.equal(a.env.FAKE_PI_REPORT, a.reportFile);
  assert.notEqual(a.marker, b.marker);
  assert.notEqual(a.path, b.path);
});

test('a mismatch is in the report, as fake-pi said it', async (t) => {
  const w = piWorld(t, 'recorded/text_only.pi87');
  const r = await ask('Say hello.', { model: 'other-model', env: w.env });
  assert.equal(r.code, 99);
  const own = r.stderr.split('\n').filter((l) => l.startsWith('fake-pi: '));
  assert.deepEqual(w.mismatches(), own);
  assert.equal(w.report()[0].pid, r.pid);
  assert.match(own[0], /^fake-pi: expectation mismatch: expect\.effective\.model: expected "fake-model", got "other-model"/);
});

test('close(): a leftover is named, killed, and the dir removed', async () => {
  const w = new PiWorld({ cassette: 'recorded/text_only.pi87', grace: 100 });
  const secs = uniqueSecs();
  execFileSync('sh', ['-c', `(setsid sleep ${secs} </dev/null >/dev/null 2>&1 &)`], { env: w.env });
  await assert.rejects(w.close(), (e) => {
    assert.ok(e instanceof LeftoverError);
    assert.match(e.message, new RegExp(`^1 process the test started still running at its end \\(killed now\\):\\n  leftover: \\d+ sleep ${secs.replace('.', '\\.')} \\(session \\d+, parent \\d+\\)$`));
    assert.equal(e.leftovers.length, 1);
    assert.equal(e.stack, `LeftoverError: ${e.message}`);
    return true;
  });
  assert.deepEqual(withArg(secs), []);
  assert.equal(fs.existsSync(w.path), false);
});

test('two worlds at once: each claims its own processes', async () => {
  const a = new PiWorld({ cassette: 'recorded/text_only.pi87', grace: 100 });
  const b = new PiWorld({ cassette: 'recorded/text_only.pi87', grace: 100 });
  const p = spawn('sleep', [uniqueSecs()], { env: b.env, stdio: 'ignore' });
  const closed = new Promise((resolve) => p.once('close', resolve));
  try {
    assert.deepEqual(a.alive(), []);
    assert.deepEqual(b.alive().map((q) => q.pid), [p.pid]);
    await a.close();
    await assert.rejects(b.close(), LeftoverError);
  } finally {
    p.kill('SIGKILL');
    await closed;
  }
});

/** Live processes whose command line has `arg`, in any of the looks taken over `ms` (one look can miss a process that forks and exits at once). */
function aliveOver(arg, ms = 300) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const found = withArg(arg);
    if (found.length) return found;
  }
  return [];
}

/** Stop, then kill, every process whose command line has `arg`, until many looks in a row find none. */
function killAllWith(arg) {
  for (let quiet = 0; quiet < 50;) {
    const found = withArg(arg);
    for (const pid of found) for (const sig of ['SIGSTOP', 'SIGKILL']) { try { process.kill(Number(pid), sig); } catch { /* gone */ } }
    quiet = found.length ? 0 : quiet + 1;
  }
}

test('a child with a made-up or stale marker is a leftover', async () => {
  // It passed before: any marker but the world's own was taken for a test running beside it.
  const closed = new PiWorld({ cassette: 'recorded/text_only.pi87' });
  await closed.close();
  const w = new PiWorld({ cassette: 'recorded/text_only.pi87', grace: 100 });
  const secs = uniqueSecs();
  for (const marker of ['x', closed.marker]) {
    spawn('sleep', [secs], { env: { ...w.env, PI_HARNESS_TEST_MARKER: marker }, stdio: 'ignore' });
  }
  try {
    await assert.rejects(w.close(), (e) => {
      assert.ok(e instanceof LeftoverError, e.message);
      assert.match(e.message, /^2 processes the test started still running at its end \(killed now\):\n/);
      assert.deepEqual(e.leftovers.map((p) => p.cmdline), [`sleep ${secs}`, `sleep ${secs}`]);
      return true;
    });
    assert.deepEqual(aliveOver(secs), []);
  } finally {
    killAllWith(secs);
  }
});

test("a child carrying the marker of a world open in another process is that world's", async () => {
  const other = spawn(process.execPath, ['-e', `
    const { PiWorld } = require('pi-harness');
    const w = new PiWorld({ cassette: 'recorded/text_only.pi87' });
    process.stdout.write(w.marker + '\\n');
    process.stdin.on('end', () => w.close().then(() => process.exit(0), (e) => process.exit(e.name === 'LeftoverError' ? 3 : 1))).resume();
  `], { stdio: ['pipe', 'pipe', 'inherit'] });
  const marker = (await new Promise((resolve) => other.stdout.once('data', resolve))).toString().trim();
  const w = new PiWorld({ cassette: 'recorded/text_only.pi87', grace: 100 });
  const p = spawn('sleep', [uniqueSecs()], { env: { ...w.env, PI_HARNESS_TEST_MARKER: marker }, stdio: 'ignore' });
  const ended = new Promise((resolve) => p.once('close', resolve));
  try {
    assert.deepEqual(w.alive(), []);
    // The other world charges it to its own test (and kills it).
    other.stdin.end();
    assert.equal(await new Promise((resolve) => other.once('close', resolve)), 3);
    await ended;
    await w.close();
  } finally {
    p.kill('SIGKILL');
    await ended;
  }
});

test('a malformed report line is named, and the leftover check still runs', async () => {
  // Before: report() threw a SyntaxError, and close() threw it before the leftover check.
  const w = new PiWorld({ cassette: 'recorded/text_only.pi87', grace: 100 });
  fs.writeFileSync(w.reportFile, Buffer.concat([
    Buffer.from('{"pid":1,"exit":99,"lines":["fake-pi: a line of its own"]}\n{"pid": 2, "exit\n[1]\n{"lines":"x"}\n\n'),
    Buffer.from([0xff, 0x0a]), Buffer.from(`${'['.repeat(100000)}\n`),
  ]));
  const bad = (n, why) => `pi-harness: ${w.reportFile}:${n}: ${why}; the line is left out`;
  assert.deepEqual(w.mismatches(), [
    'fake-pi: a line of its own', bad(2, 'not JSON'), bad(3, 'not a JSON object'),
    bad(4, 'an entry whose `lines` is not a list of strings'), bad(6, 'not UTF-8'), bad(7, 'not JSON'),
  ]);
  const secs = uniqueSecs();
  spawn('sleep', [secs], { env: w.env, stdio: 'ignore' });
  try {
    await assert.rejects(w.close(), (e) => {
      assert.ok(e instanceof LeftoverError, e.message);
      assert.match(e.message, new RegExp(`leftover: \\d+ sleep ${secs.replace('.', '\\.')} `));
      return true;
    });
    assert.equal(w.mismatches().length, 6);
    assert.deepEqual(aliveOver(secs), []);
  } finally {
    killAllWith(secs);
  }
});

test('a process that forks and exits at once is caught, or named evasive', async (t) => {
  // It passed before: each look at /proc missed the copy of the moment.
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'pih-forker-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const script = path.join(dir, 'forker.sh');
  // Starts a copy of itself and exits, about every millisecond, for ever (a fresh sh each time).
  fs.writeFileSync(script, 'sleep 0.001; sh "$0" "$1" </dev/null >/dev/null 2>&1 &\n');
  for (let run = 0; run < 3; run += 1) {
    const tag = `forker-${process.pid}-${run}-${Math.floor(Math.random() * 1e9)}`;
    const w = new PiWorld({ cassette: 'recorded/text_only.pi87', grace: 100 });
    execFileSync('sh', ['-c', `sh '${script}' ${tag} & exit 0`], { env: w.env });
    try {
      await assert.rejects(w.close(), (e) => {
        assert.ok(e instanceof LeftoverError, e.message);
        assert.match(e.message, /still running at its end \(killed now|\(evasive: /);
        return true;
      });
      assert.deepEqual(aliveOver(tag), [], `run ${run}`);
    } finally {
      killAllWith(tag);
    }
  }
});

test('node --test: a test whose wrapper leaves a process behind fails, naming it', () => {
  const secs = uniqueSecs();
  const r = nodeTest('leaky.js', { SECS: secs });
  assert.equal(r.status, 1, r.output);
  assert.match(r.output, new RegExp(`leftover: \\d+ sleep ${secs.replace('.', '\\.')} \\(session`));
  assert.match(r.output, /[#ℹ] pass 1\n[#ℹ] fail 1/);
  assert.deepEqual(withArg(secs), []);
});

test('vitest: a test whose wrapper leaves a process behind fails, naming it', (t) => {
  let vitest;
  try { vitest = path.join(path.dirname(require.resolve('vitest/package.json')), 'vitest.mjs'); } catch {
    t.skip('vitest is not installed in this project');
    return;
  }
  const secs = uniqueSecs();
  const r = spawnSync(process.execPath, [vitest, 'run', '--dir', path.join(here, '..', 'vitest-fixtures')], {
    env: envWith({ SECS: secs }), encoding: 'utf8', timeout: 60000,
  });
  const output = r.stdout + r.stderr;
  assert.equal(r.status, 1, output);
  assert.match(output, new RegExp(`leftover: \\d+ sleep ${secs.replace('.', '\\.')} \\(session`));
  assert.match(output, /Tests {2}1 failed \| 1 passed/);
  assert.deepEqual(withArg(secs), []);
});

test('a leftover that cleared its environment: caught by running the suite under pi-harness leftovers', () => {
  // No marker and orphaned to init: invisible to the helper alone (Node cannot make itself a
  // subreaper); `pi-harness leftovers -- node --test` is one, and finds it.
  const secs = uniqueSecs();
  const r = spawnSync(binaries().piHarness, ['leftovers', '--', process.execPath, '--test', path.join(here, 'fixtures', 'leaky.js')], {
    env: envWith({ SECS: secs, CLEAR_ENV: '1' }), encoding: 'utf8', timeout: 60000,
  });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stderr, new RegExp(`leftover: \\d+ sleep ${secs.replace('.', '\\.')} \\(session`));
  assert.deepEqual(withArg(secs), []);
});

test("node --test: a failing test shows fake-pi's own lines", () => {
  const r = nodeTest('mismatch.js');
  assert.equal(r.status, 1, r.output);
  assert.match(r.output, /[#ℹ] fake-pi: expectation mismatch: expect\.effective\.model: expected "fake-model", got "other-model"/);
});

test("node --test: a failing test's report shows no secret", () => {
  const key = 'sk-live-node-0123456789abcdef';
  const r = nodeTest('secret.js', { PIH_TEST_KEY: key });
  assert.equal(r.status, 1, r.output);
  assert.match(r.output, /fake-pi: expectation mismatch: expect\.prompt: expected "Say hello\.", got "my key is \[REDACTED\]"/);
  assert.ok(!r.output.includes(key) && !r.output.includes(key.slice(0, 16)), r.output);
});

test('no binary for the platform: one line, no stack trace', () => {
  assert.throws(() => binaries({ platform: 'darwin', arch: 'arm64' }), {
    name: 'UnsupportedPlatformError',
    message: /^pi-harness: no fake-pi binary for darwin-arm64 \(the packages carry linux-x64 only\); [^\n]+$/,
  });
  const r = nodeTest('unsupported.js');
  assert.equal(r.status, 1, r.output);
  assert.match(r.output, /UnsupportedPlatformError\]?: pi-harness: no fake-pi binary for darwin-arm64 \(the packages carry linux-x64 only\)/);
  assert.doesNotMatch(r.output, /at binaries \(|index\.js:\d+/);
});

test('a Codex cassette gives a codex with a CODEX_HOME of its own', async (t) => {
  const w = piWorld(t, 'codex/codex_text.cx0169');
  assert.equal(w.agent, 'codex');
  assert.equal(path.basename(w.agentPath), 'codex');
  assert.equal(w.env.CODEX_HOME, w.agentDir);
  // The cassette set up its CLI: the recorded model and provider in config.toml.
  assert.deepEqual(fs.readdirSync(w.agentDir), ['config.toml']);
  assert.match(fs.readFileSync(path.join(w.agentDir, 'config.toml'), 'utf8'), /^model = "gpt-5\.5"$/m);
  const out = execFileSync('codex', ['exec', '--json', '--skip-git-repo-check', '-m', 'gpt-5.5', 'Say hello.'],
    { env: { ...w.env, CODEX_API_KEY: 'sk-test' }, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  assert.match(out, /"type":"agent_message","text":"Hello from the scripted model\."/);
  await w.checkNoneLeft(2000);
});

test('bad input: one clear line', (t) => {
  const savedCi = process.env.CI;
  delete process.env.CI; // recording is on here even on a CI machine, where CI makes once none
  t.after(() => { if (savedCi !== undefined) process.env.CI = savedCi; });
  assert.throws(() => new PiWorld('recorded/no_such_case'), {
    name: 'CassetteNotFoundError',
    message: /^no cassette 'recorded\/no_such_case': not a file, nor a name in the bundled corpus/,
  });
  assert.throws(() => new PiWorld({ cassette: 'recorded/text_only.pi87', recordMode: 'new_episodes' }), {
    message: /^record mode 'new_episodes' is not supported: a cassette is one call/,
  });
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'pih-bad-'));
  try {
    assert.throws(() => new PiWorld({ cassette: path.join(dir, 'hello'), recordMode: 'once' }), {
      name: 'CassetteNotFoundError',
      message: `no LLM script '${dir}/hello.llm.json' to record '${dir}/hello.cassette.jsonl' from (write it beside the cassette, or pass script; format: pi-harness record --help)`,
    });
    assert.deepEqual(fs.readdirSync(dir), []);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  assert.throws(() => new PiWorld({ cassette: 'recorded/text_only.pi87', agent: 'opencode' }), {
    message: "agent 'opencode': expected one of 'pi', 'claude', 'codex', 'gemini'",
  });
});

test('the version is the binary\'s, and the corpus the one it embeds', () => {
  const bins = binaries();
  assert.equal(execFileSync(bins.piHarness, ['--version'], { encoding: 'utf8' }).trim(), `pi-harness ${harness.version}`);
  const listed = execFileSync(bins.piHarness, ['corpus', 'list'], { encoding: 'utf8' }).split('\n').filter(Boolean).sort();
  const root = harness.corpus();
  const onDisk = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p); else onDisk.push(path.relative(root, p));
    }
  };
  walk(root);
  assert.deepEqual(onDisk.sort(), listed);
});

/** A cassette dir with the LLM script `hello.llm.json` answering `text`. */
function helloDir(t, text) {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'pih-rec-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, 'hello.llm.json'), JSON.stringify({ turns: [{ text }] }));
  return dir;
}

test('with CI set, a missing cassette fails naming it and nothing is recorded', (t) => {
  const dir = helloDir(t, ['Hello']);
  const saved = process.env.CI;
  process.env.CI = '1';
  try {
    assert.throws(() => new PiWorld({ cassette: path.join(dir, 'hello'), recordMode: 'once', realPi: '/nonexistent/pi' }), {
      name: 'CassetteNotFoundError',
      message: `no cassette '${dir}/hello': not a file, nor a name in the bundled corpus (pi-harness corpus list shows them, e.g. recorded/text_only.pi87); CI is set, so record mode once is none: ${dir}/hello.cassette.jsonl is not recorded`,
    });
  } finally {
    if (saved === undefined) delete process.env.CI; else process.env.CI = saved;
  }
  assert.deepEqual(fs.readdirSync(dir), ['hello.llm.json']);
});

test('once records a missing cassette with real pi; all leaves a change for review', async (t) => {
  const realPi = process.env.PI_HARNESS_REAL_PI152;
  if (!realPi) { t.skip('PI_HARNESS_REAL_PI152 not set (pi-harness install pi 1.5.2 --print-path)'); return; }
  const savedCi = process.env.CI;
  delete process.env.CI; // the worlds below copy this environment: recording is on
  t.after(() => { if (savedCi !== undefined) process.env.CI = savedCi; });
  const dir = helloDir(t, ['Hello', ', world!']);
  const cassette = path.join(dir, 'hello.cassette.jsonl');
  const once = new PiWorld({ cassette: path.join(dir, 'hello'), recordMode: 'once', realPi });
  let r = await ask('Say hello.', { env: once.env });
  await once.close();
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.text, 'Hello, world!');
  const committed = fs.readFileSync(cassette);
  // Replayed from now on, without real pi.
  const again = new PiWorld({ cassette: path.join(dir, 'hello'), recordMode: 'once', realPi: '/nonexistent/pi' });
  assert.equal(again.recording, null);
  r = await ask('Say hello.', { env: again.env });
  await again.close();
  assert.equal(r.text, 'Hello, world!');
  fs.writeFileSync(path.join(dir, 'hello.llm.json'), JSON.stringify({ turns: [{ text: ['Good', 'bye!'] }] }));
  const all = new PiWorld({ cassette: path.join(dir, 'hello'), recordMode: 'all', realPi });
  r = await ask('Say hello.', { env: all.env });
  assert.equal(r.text, 'Goodbye!');
  assert.deepEqual(all.pending(), [`${cassette}.new`]);
  await all.close();
  assert.deepEqual(fs.readFileSync(cassette), committed);
  const review = spawnSync(binaries().piHarness, ['cassette', 'review', '--reject-all', dir], { encoding: 'utf8' });
  assert.equal(review.status, 0, review.stderr);
  assert.match(review.stdout, /Goodbye!/);
  assert.deepEqual(fs.readFileSync(cassette), committed);
  assert.deepEqual(fs.readdirSync(dir).sort(), ['hello.cassette.jsonl', 'hello.llm.json']);
});

