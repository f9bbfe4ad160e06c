// pi-harness for Node: fake-pi (the native binary, never a Node shim) replaying recorded runs of
// pi, Claude Code, Codex and Gemini CLI for the wrapper you test, and the proof that nothing your
// test started is left. Works with node:test, vitest and jest alike; typed in index.d.ts.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { execFileSync, spawnSync } = require('node:child_process');

const { version } = require('./package.json');
const {
  AGENTS, IGNORE_VAR, PLAYED_VAR, caseName, showCassette: show, runsOf, playedIn, isFile, isDir, defaultCassette,
} = require('./cassette.js');

/** `pi-harness cassette show --json CASSETTE`: `{ facts }` or `{ error }` (one line). */
const showCassette = (cassette) => show(binaries().piHarness, cassette);

const MARKER_VAR = 'PI_HARNESS_TEST_MARKER';
const REPORT_VAR = 'FAKE_PI_REPORT';
// Opt-in: a directory where a failing test's world writes its replay page (pi-harness report --html).
const HTML_VAR = 'PI_HARNESS_HTML';
// What fake-pi writes of each start for that page.
const TIMELINE_VAR = 'FAKE_PI_TIMELINE';
const RECORD_MODES = ['none', 'once', 'all'];
const SCRIPT_SUFFIX = '.llm.json';
const DEFAULT_PI_VERSION = '1.5.2';
const SUPPORTED = 'linux-x64';
const PLATFORM_PACKAGE = '@pi-harness/linux-x64';
const SUFFIXES = ['', '.cassette.jsonl', '.cassette.jsonl.zst', '.cassette.jsonl.gz'];

/** An error that is its own one-line message: test runners print no stack trace for it. */
function oneLine(ErrorClass, message) {
  const e = new ErrorClass(message);
  e.stack = `${e.name}: ${message}`;
  return e;
}

class UnsupportedPlatformError extends Error {
  constructor(message) { super(message); this.name = 'UnsupportedPlatformError'; }
}
class CassetteNotFoundError extends Error {
  constructor(message) { super(message); this.name = 'CassetteNotFoundError'; }
}
class UnusedCassetteError extends Error {
  constructor(message) { super(message); this.name = 'UnusedCassetteError'; }
}
class LeftoverError extends Error {
  constructor(message, leftovers, evasive = false) {
    super(message); this.name = 'LeftoverError'; this.leftovers = leftovers; this.evasive = evasive;
  }
}

let glibc = null;

/** Whether this Node runs on glibc (asked once: a diagnostic report is not free). */
function onGlibc() {
  if (glibc === null) {
    const report = process.report && typeof process.report.getReport === 'function' ? process.report.getReport() : null;
    glibc = !report || Boolean((report.header || {}).glibcVersionRuntime);
  }
  return glibc;
}

/** This machine as the packages name platforms: `linux-x64`, `darwin-arm64`, `linux-x64-musl`. */
function platformName(platform = process.platform, arch = process.arch) {
  const name = `${platform}-${arch}`;
  return platform === 'linux' && !onGlibc() ? `${name}-musl` : name;
}

/**
 * The native binaries: `{ fakePi, piHarness }`, real paths (a link to fakePi execs the binary
 * itself). Throws UnsupportedPlatformError, one line, where there are none.
 */
function binaries({ platform = process.platform, arch = process.arch } = {}) {
  const here = platformName(platform, arch);
  if (here !== SUPPORTED) {
    throw oneLine(UnsupportedPlatformError,
      `pi-harness: no fake-pi binary for ${here} (the packages carry ${SUPPORTED} only); ` +
      'build it from source: cargo install --locked --git <pi-harness repo> fake-pi pi-harness');
  }
  let dir;
  try {
    dir = path.dirname(require.resolve(`${PLATFORM_PACKAGE}/package.json`));
  } catch {
    throw oneLine(UnsupportedPlatformError,
      `pi-harness: ${PLATFORM_PACKAGE} is not installed (npm skipped the optional dependency?): ` +
      `npm install ${PLATFORM_PACKAGE}@${version}`);
  }
  const found = (name) => {
    const p = path.join(dir, 'bin', name);
    try { return fs.realpathSync(p); } catch {
      throw oneLine(UnsupportedPlatformError, `pi-harness: ${p} is missing: reinstall ${PLATFORM_PACKAGE}@${version}`);
    }
  };
  return { fakePi: found('fake-pi'), piHarness: found('pi-harness') };
}

let corpusDir = null;

/** The corpus the pi-harness binary embeds (cassettes/, expected/), exported once per process. */
function corpus() {
  if (corpusDir === null) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pi-harness-corpus-'));
    process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    execFileSync(binaries().piHarness, ['corpus', 'export', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
    corpusDir = dir;
  }
  return corpusDir;
}

/**
 * A cassette file: the path itself (or a directory of runs), else a name in the bundled corpus in
 * any form (`codex/codex_text.cx0169`, `cassettes/codex/codex_text.cx0169.cassette.jsonl`); the
 * error names the nearest bundled name when there is one.
 */
function resolveCassette(cassette) {
  const given = String(cassette);
  if (isFile(given)) return path.resolve(given);
  if (isDir(given) && runsOf(given).length) return path.resolve(given);
  if (!path.isAbsolute(given) && !given.split(/[\\/]/).includes('..')) {
    const root = path.join(corpus(), 'cassettes');
    for (const suffix of SUFFIXES) {
      const p = path.join(root, caseName(given) + suffix);
      if (isFile(p)) return p;
    }
  }
  const why = showCassette(given).error || '';
  const near = why.includes('; did you mean ') ? `; did you mean ${why.split('; did you mean ')[1]}` : '';
  throw oneLine(CassetteNotFoundError,
    `no cassette '${given}': not a file, nor a name in the bundled corpus (pi-harness corpus list shows them, e.g. recorded/text_only.pi87)${near}`);
}

/**
 * `claude` for a Claude Code (stream-json) cassette, `codex` for a Codex (exec-json) one,
 * `gemini` for a Gemini CLI (gemini-stream-json) one, else `pi`: from its header (for zstd,
 * which not every Node reads, from `pi-harness cassette show --json`).
 */
function agentOf(cassette) {
  if (cassette.endsWith('.zst')) {
    try {
      const shown = execFileSync(binaries().piHarness, ['cassette', 'show', '--json', cassette],
        { stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
      const agent = JSON.parse(shown).pi.agent;
      return ['claude', 'codex', 'gemini'].includes(agent) ? agent : 'pi';
    } catch {
      return 'pi';
    }
  }
  if (cassette.endsWith('.gz')) {
    const zlib = require('node:zlib');
    const text = zlib.gunzipSync(fs.readFileSync(cassette)).toString('utf8');
    return headerAgent(text.slice(0, text.indexOf('\n')));
  }
  const fd = fs.openSync(cassette, 'r');
  try {
    const buf = Buffer.alloc(64 * 1024);
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    const text = buf.subarray(0, n).toString('utf8');
    return headerAgent(text.split('\n')[0]);
  } finally {
    fs.closeSync(fd);
  }
}

function headerAgent(line) {
  try {
    const header = JSON.parse(line);
    if (header.mode === 'stream-json') return 'claude';
    if (header.codex) return 'codex';
    return header.gemini ? 'gemini' : 'pi';
  } catch { return 'pi'; }
}

function checkRecordMode(mode) {
  if (RECORD_MODES.includes(mode)) return;
  if (mode === 'new_episodes') {
    throw oneLine(Error, "record mode 'new_episodes' is not supported: a cassette is one call (use 'all' and review)");
  }
  throw oneLine(Error, `record mode '${mode}': expected one of ${RECORD_MODES.join(', ')}`);
}

/** Whether `CI` is set (non-empty, and not `0` or `false`): recording is then off. */
function ciIsSet(env = process.env) {
  const v = env.CI || '';
  return v !== '' && v !== '0' && v.toLowerCase() !== 'false';
}

/** The file a cassette to record is written to (`.cassette.jsonl` added when it has none). */
function cassetteFile(cassette) {
  const p = path.resolve(String(cassette));
  return /\.cassette\.jsonl(\.gz|\.zst)?$/.test(p) ? p : `${p}.cassette.jsonl`;
}

/** `NAME.llm.json` beside `NAME.cassette.jsonl`: the LLM script it is recorded from by default. */
function scriptBeside(cassette) {
  return cassette.replace(/\.cassette\.jsonl(\.gz|\.zst)?$/, '') + SCRIPT_SUFFIX;
}

/** `cassette`, or the same compressed (`.gz`, `.zst`), when it is a file. */
function existing(cassette) {
  for (const p of [cassette, `${cassette}.gz`, `${cassette}.zst`]) if (isFile(p)) return p;
  return null;
}

/** A word for `sh`, quoted. */
const sh = (word) => `'${String(word).replace(/'/g, "'\\''")}'`;

/**
 * What recording `target` needs: the agent (`opts.agent`, else the existing cassette's, else pi),
 * its LLM script and the real CLI (`realPi`, else `$PI_HARNESS_REAL_<AGENT>`, else `pi-harness
 * install AGENT VERSION`: `piVersion`, `$PI_HARNESS_PI_VERSION` and 1.5.2 for pi, the newest
 * pinned release for the others).
 */
function recordingPlan(target, opts) {
  const agent = opts.agent || (isFile(target) ? agentOf(target) : 'pi');
  if (!Object.prototype.hasOwnProperty.call(AGENTS, agent)) {
    throw oneLine(Error, `agent '${agent}': expected one of ${Object.keys(AGENTS).map((a) => `'${a}'`).join(', ')}`);
  }
  if (agent === 'claude') {
    throw oneLine(Error, "recording Claude Code from a test's call is not supported: its stream-json session needs a client script; record it with pi-harness record --agent claude --client-script FILE");
  }
  const script = opts.script ? path.resolve(opts.script) : scriptBeside(target);
  if (!isFile(script)) {
    throw oneLine(CassetteNotFoundError,
      `no LLM script '${script}' to record '${target}' from (write it beside the cassette, or pass script; format: pi-harness record --help)`);
  }
  let pi = opts.realPi || process.env[`PI_HARNESS_REAL_${agent.toUpperCase()}`];
  if (!pi) {
    let version = opts.piVersion;
    if (!version && agent === 'pi') version = process.env.PI_HARNESS_PI_VERSION || DEFAULT_PI_VERSION;
    if (!version) {
      const rows = JSON.parse(execFileSync(binaries().piHarness, ['agents', '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }));
      version = rows.find((r) => r.name === agent).newest;
    }
    const r = spawnSync(binaries().piHarness, ['install', agent, version, '--print-path'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (r.status !== 0) throw oneLine(Error, (r.stderr || '').trim() || `pi-harness install ${agent} ${version} failed`);
    pi = r.stdout.trim();
  }
  return { script, pi, agent };
}

// ---- processes, as /proc shows them (the rules of `pi-harness leftovers --marker`) ----
//
// A process that forks a copy of itself and exits every millisecond is gone before one look
// at /proc is over: /proc is read newest process first, a world is clean only after
// QUIET_LOOKS looks in a row find nothing, and the kill freezes first (SIGSTOP as each process
// is found: a stopped process cannot fork), then kills, in rounds until such a quiet round; a
// process found after the first round was started while the others were being killed (evasive).

/** Looks in a row that find nothing before a world is clean. */
const QUIET_LOOKS = 3;
/** What a world's marker may be made of (others are never looked up as a file name). */
const MARKER_NAME = /^[A-Za-z0-9_.-]{1,200}$/;
/** The most of fake-pi's report read (a report is a few lines; the rest is left out, said so). */
const REPORT_LIMIT = 16 << 20;

function readProc(pid, withCmdline = true) {
  let stat;
  try { stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8'); } catch { return null; }
  const close = stat.lastIndexOf(')');
  const comm = stat.slice(stat.indexOf('(') + 1, close);
  const f = stat.slice(close + 2).split(' ');
  let argv = [];
  if (withCmdline) {
    try { argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean); } catch { /* gone */ }
  }
  return {
    pid, ppid: Number(f[1]), sid: Number(f[3]), state: f[0], start: Number(f[19]),
    cmdline: withCmdline ? (argv.length ? argv.join(' ') : `[${comm}]`) : '',
  };
}

/** Every pid in /proc, highest first: the processes started last are read a moment after the listing. */
function allPids() {
  return fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n)).map(Number).sort((a, b) => b - a);
}

function gone(p) {
  if (p.state === 'Z' || p.state === 'X') return true;
  let status;
  try { status = fs.readFileSync(`/proc/${p.pid}/status`, 'utf8'); } catch { return true; }
  const bit = 1n << 8n; // SIGKILL (9) pending
  return status.split('\n').some((l) => {
    const [key, mask] = l.split(':');
    return (key === 'SigPnd' || key === 'ShdPnd') && (BigInt(`0x${mask.trim()}`) & bit) !== 0n;
  });
}

function selfAndAncestors() {
  const out = new Set();
  let pid = process.pid;
  while (pid > 1 && !out.has(pid)) {
    out.add(pid);
    const p = readProc(pid, false);
    if (!p) break;
    pid = p.ppid;
  }
  return out;
}

/** The `NAME=value` entries `pid` started with (null: gone or unreadable). */
function environ(pid) {
  try { return fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0'); } catch { return null; }
}

function valueIn(env, variable) {
  const kv = env.find((e) => e.startsWith(`${variable}=`));
  return kv === undefined ? null : kv.slice(variable.length + 1);
}

const key = (p) => `${p.pid}:${p.start}`;

/** The processes of `procs` below `root`, parents first. */
function below(procs, root) {
  const children = new Map();
  for (const p of procs) {
    if (!children.has(p.ppid)) children.set(p.ppid, []);
    children.get(p.ppid).push(p);
  }
  const out = [];
  const todo = [root];
  while (todo.length) {
    for (const c of children.get(todo.pop()) || []) { out.push(c); todo.push(c.pid); }
  }
  return out;
}
const signal = (pid, sig) => { try { process.kill(pid, sig); } catch { /* gone */ } };

// ---- the worlds open now: a descendant carrying one of their markers is theirs ----

const openMarkers = new Set();
let registryDir;

/**
 * The directory where open worlds are listed for this user on this machine (one file per marker
 * holding its owner's `PID START`, so that worlds in other threads and processes, vitest's
 * workers and Python's among them, count too); null when it cannot be had safely.
 */
function registry() {
  if (registryDir === undefined) {
    registryDir = null;
    const d = path.join(os.tmpdir(), `pi-harness-worlds-${process.getuid()}`);
    try { fs.mkdirSync(d, { mode: 0o700 }); } catch (e) { if (e.code !== 'EEXIST') return null; }
    let st;
    try { st = fs.lstatSync(d); } catch { return null; }
    if (st.isDirectory() && st.uid === process.getuid() && (st.mode & 0o077) === 0) registryDir = d;
  }
  return registryDir;
}

function openWorld(marker) {
  openMarkers.add(marker);
  const d = registry();
  const me = readProc(process.pid, false);
  if (!d || !me || !MARKER_NAME.test(marker)) return;
  const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = fs.constants;
  try {
    const fd = fs.openSync(path.join(d, marker), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
    try { fs.writeSync(fd, `${me.pid} ${me.start}\n`); } finally { fs.closeSync(fd); }
  } catch { /* unlisted: other threads and processes take its processes for leftovers */ }
}

function closeWorld(marker) {
  openMarkers.delete(marker);
  const d = registry();
  if (d && MARKER_NAME.test(marker)) { try { fs.unlinkSync(path.join(d, marker)); } catch { /* gone */ } }
}

/** Whether `marker` is a world's open now: here, or listed by a process still the one that listed it. */
function worldOpen(marker) {
  if (openMarkers.has(marker)) return true;
  const d = registry();
  if (!d || !MARKER_NAME.test(marker)) return false;
  let text;
  try {
    const fd = fs.openSync(path.join(d, marker), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    try { const buf = Buffer.alloc(64); text = buf.subarray(0, fs.readSync(fd, buf, 0, 64, 0)).toString(); } finally { fs.closeSync(fd); }
  } catch { return false; }
  const [pid, start] = text.trim().split(' ').map(Number);
  const owner = Number.isInteger(pid) && pid > 0 ? readProc(pid, false) : null;
  return Boolean(owner) && owner.start === start && owner.state !== 'Z' && owner.state !== 'X';
}

/**
 * fake-pi's report (`FAKE_PI_REPORT`: one JSON object a line), entry by entry. A line that is not
 * an entry (cut short, written by something else) becomes an entry of its own whose one line
 * names it (`name:N`) and what is wrong, never its content; the rest is still read.
 */
function parseReport(data, name) {
  const out = [];
  if (data.length > REPORT_LIMIT) {
    data = data.subarray(0, REPORT_LIMIT);
    out.push({ lines: [`pi-harness: ${name}: longer than ${REPORT_LIMIT >> 20} MiB; the rest is left out`] });
  }
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  let at = 0;
  for (let n = 1; at < data.length; n += 1) {
    let end = data.indexOf(0x0a, at);
    if (end < 0) end = data.length;
    const raw = data.subarray(at, end);
    at = end + 1;
    if (raw.toString('latin1').trim() === '') continue;
    let text = null;
    let entry;
    let why = null;
    try { text = utf8.decode(raw); } catch { why = 'not UTF-8'; }
    // (V8's own message is not repeated: it quotes the line)
    if (why === null) { try { entry = JSON.parse(text); } catch { why = 'not JSON'; } }
    if (why === null && (entry === null || typeof entry !== 'object' || Array.isArray(entry))) why = 'not a JSON object';
    if (why === null && entry.lines !== undefined
      && !(Array.isArray(entry.lines) && entry.lines.every((l) => typeof l === 'string'))) {
      why = 'an entry whose `lines` is not a list of strings';
    }
    out.push(why === null ? entry : { bad_line: n, lines: [`pi-harness: ${name}:${n}: ${why}; the line is left out`] });
  }
  return out;
}

/** `PID COMMAND LINE (session S, parent P)`, as `pi-harness leftovers` prints it. */
function describe(p) {
  return `${p.pid} ${p.cmdline} (session ${p.sid}, parent ${p.ppid})`;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * One test's world: a temp dir, fake-pi on a private PATH under the agent's name, the cassette,
 * an empty agent dir, instant replay, a unique marker, fake-pi's report file. `close()` rejects
 * with LeftoverError naming what the test started that is still alive (killed first).
 */
class PiWorld {
  constructor(options) {
    const opts = typeof options === 'string' ? { cassette: options } : { ...options };
    if (!opts.cassette) throw oneLine(CassetteNotFoundError, 'piWorld: no cassette given (a path, or a name in the bundled corpus such as recorded/text_only.pi87)');
    const asked = opts.recordMode || process.env.PI_HARNESS_RECORD_MODE || 'none';
    checkRecordMode(asked);
    /** The record mode that applies: `none` whenever CI is set. */
    this.recordMode = ciIsSet() ? 'none' : asked;
    this.fakePi = binaries().fakePi;
    const target = cassetteFile(opts.cassette);
    let found = existing(target);
    let missing = null;
    if (!found) {
      try { found = resolveCassette(opts.cassette); } catch (e) { missing = e; }
    }
    this.recording = null;
    if (this.recordMode === 'all' || (this.recordMode === 'once' && !found)) {
      this.cassette = existing(target) || target;
      this.recording = recordingPlan(target, opts);
    } else if (!found) {
      if (asked !== 'none') {
        throw oneLine(CassetteNotFoundError, `${missing.message}; CI is set, so record mode ${asked} is none: ${target} is not recorded`);
      }
      throw missing;
    } else {
      this.cassette = found;
    }
    // What the recording asks of the call (none while recording: there is no cassette yet); a
    // directory of runs: its first run's.
    const first = this.recording === null ? runsOf(this.cassette)[0] : this.cassette;
    const facts = this.recording === null && first ? (showCassette(first).facts || null) : null;
    const shown = facts && facts.pi && facts.pi.agent;
    this.agent = opts.agent || (this.recording && this.recording.agent) || (AGENTS[shown] ? shown : null)
      || (isFile(first) ? agentOf(first) : 'pi');
    if (!Object.prototype.hasOwnProperty.call(AGENTS, this.agent)) {
      throw oneLine(Error, `agent '${this.agent}': expected one of ${Object.keys(AGENTS).map((a) => `'${a}'`).join(', ')}`);
    }
    /** Whether close() lets a cassette that was never replayed (or a directory of runs replayed in part) pass. */
    this.allowUnused = opts.allowUnused === undefined ? true : Boolean(opts.allowUnused);
    const clean = String(opts.name || 'test').replace(/[^A-Za-z0-9]/g, '_').slice(0, 60);
    this.path = fs.mkdtempSync(path.join(os.tmpdir(), `pih-${clean}-`));
    this.binDir = path.join(this.path, 'bin');
    fs.mkdirSync(this.binDir);
    this.agentPath = path.join(this.binDir, this.agent);
    if (this.recording === null) {
      fs.symlinkSync(this.fakePi, this.agentPath);
    } else {
      // Recording: `pi` records the call with real pi, then fake-pi replays it.
      const words = [binaries().piHarness, 'record', '--agent', this.agent, '--record-mode', this.recordMode,
        '--script', this.recording.script, '--out', this.cassette, '--pi', this.recording.pi,
        '--replay-with', this.fakePi, '--'];
      fs.writeFileSync(this.agentPath, `#!/bin/sh\nexec ${words.map(sh).join(' ')} "$@"\n`, { mode: 0o755 });
    }
    this.agentDir = path.join(this.path, 'agent');
    fs.mkdirSync(this.agentDir);
    this.reportFile = path.join(this.path, 'fake-pi-report.jsonl');
    this.marker = `${clean}-${process.pid}-${crypto.randomUUID()}`;
    this.grace = opts.grace === undefined ? 500 : opts.grace;
    this.playedFile = path.join(this.path, 'fake-pi-played.jsonl');
    const homeVar = AGENTS[this.agent].homeVar;
    this.variables = {
      PATH: this.binDir + path.delimiter + (process.env.PATH || ''),
      FAKE_PI_CASSETTE: this.cassette,
      FAKE_PI_SPEED: String(opts.speed === undefined ? '0' : opts.speed),
      PI_CODING_AGENT_DIR: this.agentDir,
      // The agent reads its config from here (Codex's config.toml, Gemini CLI's
      // .gemini/settings.json, pi's settings.json): the recording's, unless the test's own.
      ...(homeVar ? { [homeVar]: this.agentDir } : {}),
      [MARKER_VAR]: this.marker,
      [REPORT_VAR]: this.reportFile,
      [PLAYED_VAR]: this.playedFile,
    };
    // The cassette sets up its CLI where the test gave nothing of its own: a dummy key, the
    // config that gives the recorded values in the agent's home (not in a home of the test's).
    const setup = (facts && facts.setup) || {};
    /** The test's own variables (they win over the cassette's setup). */
    this.ownEnv = { ...(opts.env || {}) };
    /** The variables set from the cassette's setup. */
    this.setUp = {};
    for (const [k, v] of Object.entries(setup.env || {})) {
      // (a variable the test's environment already has is the test's: left as it is)
      if (!Object.prototype.hasOwnProperty.call(this.ownEnv, k) && !process.env[k]) this.setUp[k] = String(v);
    }
    /** The files written into the agent's home from the cassette's setup. */
    this.setupFiles = [];
    if (homeVar && !Object.prototype.hasOwnProperty.call(this.ownEnv, homeVar)) {
      for (const f of setup.files || []) {
        const p = path.resolve(this.agentDir, String(f.path));
        if (!p.startsWith(this.agentDir + path.sep)) continue;
        fs.mkdirSync(path.dirname(p), { recursive: true });
        fs.writeFileSync(p, String(f.content));
        this.setupFiles.push(p);
      }
    }
    Object.assign(this.variables, this.setUp);
    const ignore = typeof opts.ignore === 'string' ? [opts.ignore] : (opts.ignore || []);
    if (ignore.length) this.variables[IGNORE_VAR] = ignore.join(',');
    Object.assign(this.variables, this.ownEnv);
    // PI_HARNESS_HTML=DIR: the leftover check (and a failing test, where the runner tells) writes
    // the replay page there; fake-pi then writes what each start did for it. Unset: nothing.
    this.htmlDir = process.env[HTML_VAR] ? path.resolve(process.env[HTML_VAR]) : null;
    this.html = null;
    this.name = clean;
    if (this.htmlDir) this.variables[TIMELINE_VAR] = path.join(this.path, 'fake-pi-timeline.jsonl');
    this.env = { ...process.env, ...this.variables };
    this.needle = `${MARKER_VAR}=${this.marker}`;
    const procs = allPids().map((pid) => readProc(pid, false)).filter(Boolean);
    // A process carrying the marker started no sooner than the newest process now (start times
    // only grow): only those have their environment read.
    this.since = procs.reduce((max, p) => Math.max(max, p.start), 0);
    this.before = new Set(below(procs, process.pid).map(key));
    this.closed = false;
    this.lastReport = [];
    openWorld(this.marker);
  }

  /**
   * fake-pi's report: one entry per start that said something of its own (`{pid, exit, cassette,
   * lines}`). A line that is not such an entry is one whose `lines` name it (`FILE:N`) and say
   * what is wrong: a bad report never stops the test's end.
   */
  report() {
    if (this.closed) return this.lastReport;
    let data;
    try {
      const fd = fs.openSync(this.reportFile, 'r');
      try {
        const buf = Buffer.alloc(Math.min(REPORT_LIMIT + 1, Math.max(0, fs.fstatSync(fd).size) + 1));
        data = buf.subarray(0, fs.readSync(fd, buf, 0, buf.length, 0));
      } finally { fs.closeSync(fd); }
    } catch (e) {
      return e.code === 'ENOENT' ? [] : [{ lines: [`pi-harness: ${this.reportFile}: cannot read it: ${e.code || e.message}`] }];
    }
    return parseReport(data, this.reportFile);
  }

  /**
   * Write this world's replay page (`pi-harness report --html`: the replay as it happened, what
   * fake-pi said, `leftovers`, `failure`, beside the cassette's own run) into $PI_HARNESS_HTML;
   * its path, or null when the variable is unset or the page could not be written (said on stderr).
   */
  writeHtml({ failure, leftovers = [] } = {}) {
    if (!this.htmlDir || !fs.existsSync(this.path)) return null;
    fs.mkdirSync(this.htmlDir, { recursive: true });
    const out = path.join(this.htmlDir, `${this.name}-${this.marker.slice(-8)}.html`);
    const left = path.join(this.path, 'leftovers.txt');
    fs.writeFileSync(left, leftovers.map((l) => `${l}\n`).join(''));
    const args = ['report', '--html', out, '--cassette', this.cassette, '--leftovers', left, '--name', this.name];
    const timeline = path.join(this.path, 'fake-pi-timeline.jsonl');
    if (isFile(this.reportFile)) args.push('--fake-pi-report', this.reportFile);
    if (isFile(timeline)) args.push('--fake-pi-timeline', timeline);
    if (failure) args.push('--failure', String(failure).slice(0, 4000));
    const r = spawnSync(binaries().piHarness, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
    if (r.status !== 0) {
      process.stderr.write(`pi-harness: the replay page was not written: ${(r.stderr || r.error || '').toString().trim()}\n`);
      return null;
    }
    this.html = out;
    return out;
  }

  /**
   * What this world set up for the call, a line each: the cassette and agent, each variable it
   * gave (from the cassette, or the test's own), the agent's home and its files, the fields ignored.
   */
  describe() {
    const lines = [`cassette ${this.cassette} (${AGENTS[this.agent].displayName}, as ${this.agent} on PATH)`];
    for (const k of Object.keys(this.setUp).sort()) lines.push(`${k}=${this.setUp[k]} (from the cassette: the call needs it set)`);
    for (const k of Object.keys(this.ownEnv).sort()) lines.push(`${k}=${this.ownEnv[k]} (the test's own)`);
    const homeVar = AGENTS[this.agent].homeVar;
    if (homeVar && !Object.prototype.hasOwnProperty.call(this.ownEnv, homeVar)) {
      const held = this.setupFiles.map((p) => path.relative(this.agentDir, p)).join(', ') || 'nothing';
      lines.push(`${homeVar}=${this.agentDir} (the world's, holding ${held})`);
      for (const p of this.setupFiles) {
        if (!isFile(p)) continue;
        for (const l of fs.readFileSync(p, 'utf8').split('\n').filter(Boolean)) lines.push(`    ${path.relative(this.agentDir, p)}: ${l}`);
      }
    }
    if (this.variables[IGNORE_VAR]) lines.push(`${IGNORE_VAR}=${this.variables[IGNORE_VAR]} (not compared at replay)`);
    return lines.join('\n');
  }

  /**
   * Throws UnusedCassetteError (one line) when the cassette was never replayed, or a directory of
   * runs only in part (by fake-pi's FAKE_PI_PLAYED trace).
   */
  checkPlayed() {
    const names = playedIn(this.playedFile);
    const runs = runsOf(this.cassette);
    let problem = null;
    if (!names.length) {
      // A refused start (fake-pi's report says why) is the CLI run: a test of a refused call
      // (exit 99) is not one whose cassette went unused.
      if (!this.report().some((e) => e.exit !== undefined)) {
        problem = `cassette ${this.cassette} was never replayed: the test's code never ran the CLI (say allowUnused: true if that is expected)`;
      }
    } else if (runs.length > 1) {
      const seen = new Set(names.map((n) => path.basename(n)));
      const left = runs.map((r) => path.basename(r)).filter((n) => !seen.has(n));
      if (left.length) {
        problem = `cassette ${this.cassette} was replayed in part: ${runs.length - left.length} of ${runs.length} runs; never played: ${left.join(', ')} (say allowUnused: true if that is expected)`;
      }
    }
    if (problem) throw oneLine(UnusedCassetteError, problem);
  }

  /** Re-recordings of this world's cassette waiting for `pi-harness cassette review`. */
  pending() {
    const plain = this.cassette.replace(/\.(gz|zst)$/, '');
    return [`${plain}.new`, `${plain}.gz.new`, `${plain}.zst.new`].filter(isFile);
  }

  /** Every line fake-pi said of its own, in order (`fake-pi: expectation mismatch: ...`). */
  mismatches() {
    return this.report().flatMap((e) => e.lines || []);
  }

  /**
   * Whether the new descendant `p` is this world's: it carries this world's marker, none, or one
   * of no world open now (a stale or made-up one). `env`: its environment, when already read.
   */
  claims(p, env = environ(p.pid)) {
    const m = env === null ? null : valueIn(env, MARKER_VAR);
    return m === null || m === this.marker || !worldOpen(m);
  }

  /**
   * One look at /proc, newest process first: the live processes this world started (new
   * descendants it claims, and processes carrying its marker), each SIGSTOPped as soon as it is
   * found when `freeze`.
   */
  look(freeze = false) {
    const me = process.pid;
    const mine = selfAndAncestors();
    const seen = new Map();
    const envs = new Map();
    const found = new Map();
    const take = (p) => {
      if (freeze) signal(p.pid, 'SIGSTOP');
      found.set(p.pid, readProc(p.pid) || p);
    };
    for (const pid of allPids()) {
      if (mine.has(pid)) continue;
      const p = readProc(pid, false);
      if (!p) continue;
      seen.set(pid, p);
      if (this.before.has(key(p))) continue;
      const env = p.start >= this.since ? environ(pid) : null;
      envs.set(pid, env);
      if (env && (env.includes(this.needle) || (p.ppid === me && this.claims(p, env))) && !gone(p)) take(p);
    }
    // Deeper descendants (a parent is read after its children), and those whose parent went
    // while this look ran (reparented by now).
    for (const p of [...seen.values()]) {
      if (!seen.has(p.ppid) && !mine.has(p.ppid) && p.ppid > 1) {
        const q = readProc(p.pid, false);
        if (q) seen.set(p.pid, q);
      }
    }
    for (const c of below([...seen.values()], me)) {
      if (found.has(c.pid) || this.before.has(key(c)) || gone(c)) continue;
      if (this.claims(c, envs.has(c.pid) ? envs.get(c.pid) : environ(c.pid))) take(c);
    }
    return [...found.values()].sort((a, b) => a.pid - b.pid);
  }

  /**
   * The live processes the test started: new descendants of this process (but those carrying the
   * marker of another world still open: a test running beside this one started them), and marked ones.
   */
  alive() {
    return this.look();
  }

  /**
   * Freeze, then kill: SIGSTOP and SIGKILL `first`, then look again (each process found stopped at
   * once, so that it cannot fork) and kill what was found, in rounds until QUIET_LOOKS looks in a
   * row find nothing (at most two seconds). `{ killed, evasive }`: every process killed, and whether
   * new ones appeared after the first round (started while the others were being killed) or the
   * quiet never came.
   */
  async killAll(first) {
    const killed = new Map();
    let todo = first;
    for (const p of todo) signal(p.pid, 'SIGSTOP');
    let evasive = false;
    let rounds = 0;
    let quiet = 0;
    const stop = Date.now() + 2000;
    for (;;) {
      for (const p of todo) {
        signal(p.pid, 'SIGKILL');
        if (!killed.has(key(p))) { evasive = evasive || rounds > 0; killed.set(key(p), p); }
      }
      if (todo.length) rounds += 1;
      if (Date.now() > stop) { evasive = true; break; }
      await sleep(2);
      todo = this.look(true);
      quiet = todo.length ? 0 : quiet + 1;
      if (quiet >= QUIET_LOOKS) break;
    }
    return { killed: [...killed.values()].sort((a, b) => a.pid - b.pid), evasive };
  }

  /**
   * Rejects with LeftoverError naming what is alive `grace` ms from now (polled until QUIET_LOOKS
   * looks in a row find nothing), stopped and killed first; `evasive` when new ones kept starting.
   */
  async checkNoneLeft(grace = this.grace) {
    const end = Date.now() + grace;
    let quiet = 0;
    let left;
    for (;;) {
      left = this.look();
      quiet = left.length ? 0 : quiet + 1;
      if (quiet >= QUIET_LOOKS) return;
      if (Date.now() >= end) break;
      await sleep(left.length ? 10 : 2);
    }
    const { killed, evasive } = await this.killAll(left);
    if (!killed.length && !evasive) return;
    let message;
    if (!killed.length) {
      message = 'processes the test started kept starting and ending at its end, and none was caught alive (evasive: something forks and exits at once)';
    } else {
      const what = killed.length === 1 ? '1 process' : `${killed.length} processes`;
      const how = evasive ? '; evasive: new ones kept starting while they were being killed' : '';
      message = `${what} the test started still running at its end (killed now${how}):\n${killed.map((p) => `  leftover: ${describe(p)}`).join('\n')}`;
    }
    const page = this.writeHtml({ failure: message, leftovers: killed.map(describe) });
    if (page) message += `\n  timeline: ${page}`;
    const e = new LeftoverError(message, killed, evasive);
    e.stack = `${e.name}: ${e.message}`;
    throw e;
  }

  /** The end of the test: the leftover check, then the temp dir removed. A second call does nothing. */
  async close() {
    if (this.closed) return;
    this.lastReport = this.report();
    this.closed = true;
    try {
      await this.checkNoneLeft();
      if (!this.allowUnused && this.recording === null) this.checkPlayed();
    } finally {
      closeWorld(this.marker);
      fs.rmSync(this.path, { recursive: true, force: true });
    }
  }
}

/**
 * A world for one test. `options`: a cassette (path or bundled name) or
 * `{ cassette, agent, speed, name, grace, recordMode, script, realPi, piVersion }`.
 * recordMode (default `$PI_HARNESS_RECORD_MODE`, else `none`; always `none` when CI is set):
 * `none` replays and throws on a missing cassette; `once` records a missing cassette on the
 * wrapper's first `pi` call (`pi-harness record --record-mode once --replay-with fake-pi`,
 * from the LLM script `NAME.llm.json` beside `NAME.cassette.jsonl` against real pi:
 * `realPi`, `$PI_HARNESS_REAL_PI`, else `pi-harness install pi 1.5.2`); `all` records again,
 * and a recording that differs waits in `NAME.cassette.jsonl.new` for `pi-harness cassette review`. Given a test context (`t` of
 * node:test, or vitest's/jest's with `onTestFinished`), the world is closed when the test ends
 * and its leftovers fail it; a failing test gets fake-pi's own lines added to its error.
 */
function piWorld(context, options) {
  return configured({}, context, options);
}

/** piWorld with `defaults` under the test's options (`env` merged, `ignore` joined). */
function configured(defaults, context, options) {
  if (options === undefined && !(context && (context.after || context.onTestFinished || context.task))) {
    options = context; context = undefined;
  }
  const given = typeof options === 'string' ? { cassette: options } : { ...(options || {}) };
  const opts = { ...defaults, ...given };
  if (defaults.env && given.env) opts.env = { ...defaults.env, ...given.env };
  if (defaults.ignore && given.ignore) opts.ignore = [].concat(defaults.ignore, given.ignore);
  if (context && !opts.name) opts.name = context.name || (context.task && context.task.name) || 'test';
  if (!opts.cassette && context) opts.cassette = defaultCassette(context, opts.cassetteDir);
  // A world of a test context fails its test when its cassette was never replayed.
  if (context && opts.allowUnused === undefined) opts.allowUnused = false;
  const world = new PiWorld(opts);
  if (context && typeof context.after === 'function') {
    // node:test: what fake-pi said of its own becomes the test's diagnostics.
    context.after(async () => {
      for (const line of world.mismatches()) context.diagnostic(line);
      // node:test does not tell an after hook whether the test failed: the page is written
      // when fake-pi said something of its own (a mismatch), and by the leftover check.
      if (world.htmlDir && world.mismatches().length) {
        const page = world.writeHtml({ failure: world.mismatches().join('\n') });
        if (page) context.diagnostic(`pi-harness timeline: ${page}`);
      }
      for (const p of world.pending()) context.diagnostic(`re-recorded, waiting for pi-harness cassette review: ${p}`);
      await world.close();
    });
  } else if (context && typeof context.onTestFinished === 'function') {
    context.onTestFinished(() => world.close());
  }
  if (context && typeof context.onTestFailed === 'function') {
    context.onTestFailed((result) => {
      const lines = world.mismatches();
      if (lines.length) process.stderr.write(`fake-pi report:\n${lines.join('\n')}\n`);
      const errors = (result && (result.errors || (result.result && result.result.errors))) || [];
      const failure = errors.map((e) => (e && e.message) || String(e)).join('\n') || lines.join('\n') || 'the test failed';
      const page = world.writeHtml({ failure, leftovers: world.alive().map(describe) });
      if (page) process.stderr.write(`pi-harness timeline: ${page}\n`);
    });
  }
  return world;
}

/**
 * A `piWorld` with defaults for every test that uses it (a module's, a suite's): `agent`,
 * `cassetteDir`, `recordMode`, `ignore`, `env`, `allowUnused`, ...; a test's own options win
 * (`env` merged, `ignore` joined).
 */
piWorld.configure = (defaults) => {
  const d = { ...(defaults || {}) };
  const world = (context, options) => configured(d, context, options);
  world.configure = (more) => piWorld.configure({ ...d, ...more });
  return world;
};

module.exports = {
  piWorld,
  AGENTS,
  caseName,
  UnusedCassetteError,
  IGNORE_VAR,
  PLAYED_VAR,
  PiWorld,
  binaries,
  corpus,
  resolveCassette,
  platformName,
  describe,
  version,
  MARKER_VAR,
  REPORT_VAR,
  HTML_VAR,
  RECORD_MODES,
  LeftoverError,
  CassetteNotFoundError,
  UnsupportedPlatformError,
};
