#!/usr/bin/env node
// A Codex CLI driver in Node, no dependencies: what an integrator writes to run
// `codex exec --json` and hand the rest of a system the normalized stream
// (docs/normalized-stream.md, "Codex's exec --json").
//
// Scored by the conformance suite on the Codex cases (cassettes/codex/):
//   pi-harness conform --impl 'node conformance/examples/node-codex-impl/impl.js'
// A request with `"agent": "codex"` names the whole command line after `codex` (`argv`: the
// recorded `exec` options, then `--` and the prompt, or `-` when the prompt goes on stdin),
// the environment (CODEX_HOME and its config.toml are the case's) and the working directory.
// It runs exactly that, maps each stdout line as it arrives and ends the run with one terminal
// message. `cancel_after_idle_ms`: once no message has come for that long, SIGTERM to Codex
// (SIGKILL after a grace), and the run ends `terminal.cancelled`. Processes: Codex and
// everything it starts carry a marker variable of this driver's own; whatever still carries
// it once Codex is gone is killed (Codex's SIGTERM leaves a tool's grandchildren running).
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');

const CAPABILITIES = ['text', 'thinking', 'tools', 'errors', 'cancel', 'session', 'codex', 'codex-0.169'];
const TOOL_TYPES = new Set(['command_execution', 'file_change', 'mcp_tool_call', 'web_search', 'collab_tool_call']);
// The request fields of each tool-like item: a tool call's arguments.
const TOOL_ARGS = {
  command_execution: ['command'],
  file_change: ['changes'],
  mcp_tool_call: ['server', 'tool', 'arguments'],
  web_search: ['query', 'action'],
  collab_tool_call: ['tool', 'sender_thread_id', 'receiver_thread_ids', 'prompt'],
};
const GRACE_MS = 2000;
const STDERR_TAIL_BYTES = 4096;
// Lines Codex writes on every start: not what went wrong.
const ROUTINE_STDERR = [/^Reading (additional input|prompt) from stdin/, /PATH/];

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const num = (v) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : 0);
const emit = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');

// Codex's exec --json events to normalized messages, one process one run.
class CodexMapper {
  constructor(resumed, out) {
    this.resumed = resumed;
    this.out = out;
    this.session = null;
    this.text = new Map(); // agent_message id -> text emitted
    this.thoughts = new Set();
    this.tools = new Map(); // id -> 'open' | 'ended'
    this.turn = null; // 'completed' | 'failed' once a turn ended
    this.failure = null; // turn.failed's message
    this.fatal = null; // the last fatal `error` event's message
    this.usage = null;
  }

  line(text) {
    let ev;
    try { ev = JSON.parse(text); } catch (_) { return; }
    if (!isObject(ev)) return;
    const item = isObject(ev.item) ? ev.item : null;
    switch (ev.type) {
      case 'thread.started':
        if (this.session === null) {
          this.session = ev.thread_id;
          this.out({ type: this.resumed ? 'session.resumed' : 'session.started', session_id: ev.thread_id });
        }
        break;
      case 'turn.started':
        this.turn = null;
        break;
      case 'item.started':
      case 'item.updated':
      case 'item.completed':
        if (item) this.item(ev.type, item);
        break;
      case 'error':
        if (typeof ev.message === 'string') this.fatal = ev.message;
        break;
      case 'turn.completed': {
        const u = isObject(ev.usage) ? ev.usage : {};
        const cached = num(u.cached_input_tokens);
        const written = num(u.cache_write_input_tokens);
        const input = num(u.input_tokens);
        const output = num(u.output_tokens);
        const usage = {
          input_tokens: Math.max(0, input - cached - written),
          output_tokens: output,
          cache_read_tokens: cached,
          cache_write_tokens: written,
          total_tokens: input + output,
          cost_usd: 0,
        };
        this.out({ type: 'usage', ...usage });
        this.usage = this.usage ? sum(this.usage, usage) : usage;
        this.turn = 'completed';
        break;
      }
      case 'turn.failed':
        this.failure = isObject(ev.error) && typeof ev.error.message === 'string' ? ev.error.message : this.fatal;
        this.turn = 'failed';
        break;
      default:
        break;
    }
  }

  item(kind, item) {
    const id = item.id;
    if (item.type === 'agent_message' && typeof item.text === 'string') {
      const before = this.text.get(id) || '';
      if (item.text.startsWith(before) && item.text.length > before.length) {
        this.out({ type: 'assistant', text: item.text.slice(before.length) });
        this.text.set(id, item.text);
      }
    } else if (item.type === 'reasoning' && kind === 'item.completed') {
      if (!this.thoughts.has(id) && item.text) this.out({ type: 'assistant.thought', text: item.text });
      this.thoughts.add(id);
    } else if (TOOL_TYPES.has(item.type) && this.tools.get(id) !== 'ended') {
      if (!this.tools.has(id)) {
        const args = {};
        for (const k of TOOL_ARGS[item.type]) if (k in item) args[k] = item[k];
        this.out({ type: 'tool.call', id, name: item.type, arguments: args });
        this.tools.set(id, 'open');
      }
      if (kind === 'item.completed') {
        const failed = typeof item.status === 'string' && item.status !== 'completed';
        this.out(failed ? { type: 'tool.failed', id, error: item } : { type: 'tool.completed', id, result: item });
        this.tools.set(id, 'ended');
      }
    }
  }

  // The one terminal: from the last turn's end, else from how Codex ended.
  finish(exit, stderrTail, cancelled) {
    if (cancelled) {
      this.out(exit ? { type: 'terminal.cancelled', exit } : { type: 'terminal.cancelled' });
    } else if (this.turn === 'completed') {
      this.out({ type: 'terminal.completed', stop_reason: 'none', usage: this.usage });
    } else {
      const last = (stderrTail || '').split('\n').map((l) => l.trim())
        .filter((l) => l && !ROUTINE_STDERR.some((r) => r.test(l))).pop();
      let reason = 'missing_terminal_event';
      let message = "codex's stdout ended before its turn did";
      if (this.turn === 'failed') {
        reason = 'model_error';
        message = this.failure || 'the turn failed';
      } else if (exit && exit.signal) {
        reason = 'process_signal';
        message = `codex was killed by ${exit.signal} before the turn ended`;
      } else if (exit && exit.code !== 0) {
        reason = 'process_exit';
        message = `codex exited with code ${exit.code}`;
      }
      if (reason !== 'model_error' && (this.fatal || last)) message += `: ${this.fatal || last}`;
      const m = { type: 'terminal.failed', reason, message, exit };
      if (stderrTail) m.stderr_tail = stderrTail;
      this.out(m);
    }
  }
}

function sum(a, b) {
  const s = {};
  for (const k of Object.keys(a)) s[k] = a[k] + b[k];
  return s;
}

// Every process carrying the marker (`name=value` in its environment), but this one.
function killMarked(name, value) {
  const needle = Buffer.from(`\0${name}=${value}\0`);
  let entries = [];
  try { entries = fs.readdirSync('/proc'); } catch (_) { return; }
  for (const e of entries) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      const env = Buffer.concat([Buffer.from([0]), fs.readFileSync(`/proc/${e}/environ`)]);
      if (env.includes(needle)) process.kill(Number(e), 'SIGKILL');
    } catch (_) { /* gone, or not ours */ }
  }
}

function run(req) {
  const markerName = 'NODE_CODEX_IMPL_RUN';
  const marker = `${process.pid}-${Math.random().toString(16).slice(2)}`;
  const argv = Array.isArray(req.argv) ? req.argv : ['exec', '--json', '--skip-git-repo-check', '-'];
  const onStdin = argv[argv.length - 1] === '-';
  let sawMessage = false;
  let idleTimer = null;
  let cancelled = false;
  let stderr = Buffer.alloc(0);
  let exit = null;
  const out = (m) => {
    emit(m);
    sawMessage = true;
    armIdle();
  };
  const mapper = new CodexMapper(Boolean(req.session && req.session.resume), out);
  const child = spawn('codex', argv, {
    cwd: req.cwd || undefined,
    env: { ...process.env, ...(req.env || {}), [markerName]: marker },
    stdio: [onStdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  if (onStdin) {
    child.stdin.on('error', () => { /* Codex may end before it reads */ });
    child.stdin.end(req.prompt);
  }

  function cancel() {
    if (cancelled || exit) return;
    cancelled = true;
    try { child.kill('SIGTERM'); } catch (_) { /* gone */ }
    setTimeout(() => {
      try { child.kill('SIGKILL'); } catch (_) { /* gone */ }
      killMarked(markerName, marker);
    }, GRACE_MS).unref();
  }
  function armIdle() {
    const ms = req.cancel_after_idle_ms;
    if (typeof ms !== 'number' || !sawMessage || cancelled) return;
    clearTimeout(idleTimer);
    idleTimer = setTimeout(cancel, ms);
  }

  let rest = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    rest += chunk;
    let i;
    while ((i = rest.indexOf('\n')) >= 0) {
      mapper.line(rest.slice(0, i));
      rest = rest.slice(i + 1);
    }
  });
  child.stderr.on('data', (chunk) => {
    stderr = Buffer.concat([stderr, chunk]);
    if (stderr.length > STDERR_TAIL_BYTES) stderr = stderr.subarray(stderr.length - STDERR_TAIL_BYTES);
  });
  child.on('error', (e) => {
    if (child.pid === undefined) emit({ type: 'terminal.failed', reason: 'spawn_failed', message: `codex: ${e.message}` });
  });
  child.on('exit', (code, signal) => {
    exit = signal ? { signal } : { code };
    // A tool Codex left behind may hold its stdout open: not for long.
    setTimeout(() => { killMarked(markerName, marker); child.stdout.destroy(); }, GRACE_MS).unref();
  });
  child.on('close', () => {
    clearTimeout(idleTimer);
    if (child.pid === undefined) return;
    if (rest) mapper.line(rest);
    killMarked(markerName, marker);
    mapper.finish(exit, stderr.length ? stderr.toString('utf8') : null, cancelled);
  });
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, cancel);
}

function main() {
  if (process.argv.includes('--capabilities')) {
    emit({ protocol: 1, name: 'node-codex-impl (example)', capabilities: CAPABILITIES });
    return;
  }
  let input = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d) => { input += d; });
  process.stdin.on('end', () => {
    let req;
    try { req = JSON.parse(input); } catch (e) {
      process.stderr.write(`node-codex-impl: the request is not JSON: ${e.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (!isObject(req) || req.version !== 1) {
      process.stderr.write('node-codex-impl: I read request documents of version 1\n');
      process.exitCode = 2;
      return;
    }
    if (req.agent !== 'codex') {
      emit({ type: 'terminal.failed', reason: 'invalid_request', message: 'this example runs Codex (`"agent": "codex"`) only' });
      return;
    }
    run(req);
  });
}

main();
