// What a cassette asks of its caller, for the Node helper (index.js): the one name form every
// tool takes, `pi-harness cassette show --json`'s facts (the setup a world gives the call), the
// runs a cassette holds and fake-pi's trace of the ones played, the cassette named after a test,
// and the agents the harness knows.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

function isFile(p) {
  try { return fs.statSync(p).isFile(); } catch { return false; }
}

// The fields fake-pi is told not to compare (`cassette relax --ignore` without rewriting the file).
const IGNORE_VAR = 'FAKE_PI_IGNORE';
// Where fake-pi leaves a line per start that played its cassette (the unused-cassette check).
const PLAYED_VAR = 'FAKE_PI_PLAYED';

/**
 * Every agent CLI the harness knows (`pi-harness agents --json`): the variable naming its home
 * and the one it reads its key from. A test of this package fails when the registry has an agent
 * this table (or index.d.ts) does not name.
 */
const AGENTS = Object.freeze({
  pi: Object.freeze({ displayName: 'pi', homeVar: 'PI_CODING_AGENT_DIR', apiKeyVar: null }),
  claude: Object.freeze({ displayName: 'Claude Code', homeVar: null, apiKeyVar: 'ANTHROPIC_API_KEY' }),
  codex: Object.freeze({ displayName: 'Codex', homeVar: 'CODEX_HOME', apiKeyVar: 'CODEX_API_KEY' }),
  gemini: Object.freeze({ displayName: 'Gemini CLI', homeVar: 'GEMINI_CLI_HOME', apiKeyVar: 'GEMINI_API_KEY' }),
});

/**
 * The one name of a bundled cassette, from any form of it: `codex/codex_text.cx0169`, or as
 * `pi-harness corpus list` prints it (`cassettes/codex/codex_text.cx0169.cassette.jsonl`), with
 * `./` in front or a compression suffix behind.
 */
function caseName(given) {
  let s = String(given).trim();
  while (s.startsWith('./')) s = s.slice(2);
  if (s.startsWith('cassettes/')) s = s.slice('cassettes/'.length);
  return s.replace(/\.cassette\.jsonl(\.gz|\.zst)?$/, '');
}

/**
 * `PI_HARNESS cassette show --json CASSETTE`: `{ facts }`, or `{ error }`, the binary's one line
 * (which names the nearest bundled name when there is one).
 */
function showCassette(piHarness, cassette) {
  const r = spawnSync(piHarness, ['cassette', 'show', '--json', String(cassette)],
    { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 256 << 20 });
  if (r.status !== 0) {
    const line = (r.stderr || '').toString().trim().split('\n')[0] || `pi-harness cassette show exited ${r.status}`;
    return { error: line.replace(/^error: /, '') };
  }
  try { return { facts: JSON.parse(r.stdout.toString('utf8')) }; } catch { return { error: 'pi-harness cassette show --json printed no JSON' }; }
}

/** A directory's cassettes in name order (one per start), else the one file. */
function runsOf(cassette) {
  let st;
  try { st = fs.statSync(cassette); } catch { return [cassette]; }
  if (!st.isDirectory()) return [cassette];
  return fs.readdirSync(cassette).filter((n) => /\.cassette\.jsonl(\.gz|\.zst)?$/.test(n)).sort()
    .map((n) => path.join(cassette, n)).filter(isFile);
}

/** The cassettes fake-pi's FAKE_PI_PLAYED trace names, one per start that played. */
function playedIn(trace) {
  let text;
  try { text = fs.readFileSync(trace, 'utf8').slice(0, 16 << 20); } catch { return []; }
  const out = [];
  for (const line of text.split('\n')) {
    try { const e = JSON.parse(line); if (e && typeof e.cassette === 'string') out.push(e.cassette); } catch { /* not a line of it */ }
  }
  return out;
}

function isDir(p) {
  try { return fs.statSync(p).isDirectory(); } catch { return false; }
}

/** The test file of `context` (node:test's `filePath`, vitest's task file), else the running script. */
function testFile(context) {
  const task = context && context.task;
  const file = (context && context.filePath) || (task && task.file && (task.file.filepath || task.file.name)) || process.argv[1];
  return file ? path.resolve(String(file)) : null;
}

/**
 * The cassette named after the test: `CASSETTE_DIR/MODULE/TEST` (default `cassettes` beside the
 * test file; a relative dir is taken from there), as pytest-recording names them.
 */
function defaultCassette(context, cassetteDir) {
  const file = testFile(context);
  const here = file ? path.dirname(file) : process.cwd();
  const base = path.resolve(here, cassetteDir || 'cassettes');
  const module = file ? path.basename(file).replace(/\.(c|m)?[jt]sx?$/, '') : 'test';
  const name = (context && (context.name || (context.task && context.task.name))) || 'test';
  const clean = String(name).replace(/[^A-Za-z0-9_.-]+/g, '-').replace(/^-+|-+$/g, '') || 'test';
  return path.join(base, module, clean);
}

module.exports = {
  AGENTS, IGNORE_VAR, PLAYED_VAR, caseName, showCassette, runsOf, playedIn, isFile, isDir, testFile, defaultCassette,
};
