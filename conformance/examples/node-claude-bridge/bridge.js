#!/usr/bin/env node
// A bridge from Claude Code to the normalized stream, in Node, no dependencies: what an
// integrator writes to drive `claude -p --input-format stream-json --output-format
// stream-json --verbose --include-partial-messages` and hand the rest of a system the
// same stream the pi mappers give (docs/normalized-stream.md, "Claude Code's stream-json").
//
// Scored by the conformance suite on the Claude Code cases (cassettes/claude/):
//   pi-harness conform --impl 'node conformance/examples/node-claude-bridge/bridge.js'
// A request with `"agent": "claude"` names the CLI options (`argv`), its environment and
// working directory, and the host's side of the session as steps: once the CLI has written
// `after_stdout_lines` lines on stdout, write a user message or a control response
// (`send`, one JSON line; `send_raw`, a line as it is), close stdin, or send a signal.
//
// One Claude process serves a session of turns; each turn (system/init .. its `result`) is
// one run and ends in exactly one terminal message. When the process ends with a turn still
// open, the terminal comes from how it ended (code, signal). Messages are printed as the
// records arrive. Processes: the CLI and anything it starts carry a marker variable of this
// bridge's own; whatever still carries it once the CLI is gone is killed.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');

const CAPABILITIES = ['text', 'thinking', 'tools', 'retry', 'errors', 'claude', 'claude-2.1'];

// The command line when a request gives none (the recordings' options).
const DEFAULT_ARGV = ['-p', '--input-format', 'stream-json', '--output-format', 'stream-json', '--verbose',
  '--include-partial-messages', '--permission-prompt-tool', 'stdio'];

const MAX_LINE_BYTES = 16 * 1024 * 1024; // a longer stdout line is skipped and reported
const MAX_INVALID_LINES = 32; // bad lines kept per run (the rest are counted)
const MAX_INVALID_BYTES = 16 * 1024; // excerpt bytes kept per run
const EXCERPT_BYTES = 200; // per bad line
const OVERSIZED_HEAD_BYTES = 128;
const STDERR_TAIL_BYTES = 4096;
const GRACE_MS = 2000; // SIGTERM -> SIGKILL; CLI gone -> stop waiting for a held stdout

// `system` subtypes and record types that are understood and map to nothing.
const IGNORED_SYSTEM = new Set(['status', 'thinking_tokens', 'task_started', 'task_notification', 'permission_denied']);
const IGNORED_TYPES = new Set(['tool_progress', 'control_request', 'control_response', 'control_cancel_request']);

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v) => (typeof v === 'string' ? v : null);

// A count: a non-negative whole number (missing or malformed: null, read as 0).
function count(v) {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v < 1.8e19 ? v : null;
}

// `s` cut to at most `max` bytes of UTF-8, on a character boundary.
function cut(s, max) {
  if (Buffer.byteLength(s) <= max) return s;
  let bytes = 0;
  let end = 0;
  for (const ch of s) {
    const n = Buffer.byteLength(ch);
    if (bytes + n > max) break;
    bytes += n;
    end += ch.length;
  }
  return s.slice(0, end);
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

// ---------------------------------------------------------------------------
// Framing: lines end at `\n` only; one trailing `\r` is dropped; a final line without `\n`
// counts at the end; an oversized line is skipped without being kept whole.

class LineSplitter {
  constructor(onLine) {
    this.onLine = onLine; // (number, Buffer) or (number, null, {bytes, head}) for an oversized one
    this.parts = [];
    this.len = 0;
    this.skipping = null; // {bytes, head} while skipping an oversized line
    this.number = 0;
  }

  push(chunk) {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(10, start);
      const piece = chunk.subarray(start, nl < 0 ? chunk.length : nl);
      start = nl < 0 ? chunk.length : nl + 1;
      this.add(piece);
      if (nl >= 0) this.end();
    }
  }

  add(piece) {
    if (this.skipping) {
      const s = this.skipping;
      s.bytes += piece.length;
      if (s.head.length < OVERSIZED_HEAD_BYTES) {
        s.head = Buffer.concat([s.head, piece.subarray(0, OVERSIZED_HEAD_BYTES - s.head.length)]);
      }
      return;
    }
    this.parts.push(piece);
    this.len += piece.length;
    // One byte over the cap is allowed while the line may still end in `\r`.
    if (this.len > MAX_LINE_BYTES + 1) {
      const all = Buffer.concat(this.parts);
      this.skipping = { bytes: all.length, head: all.subarray(0, OVERSIZED_HEAD_BYTES) };
      this.parts = [];
      this.len = 0;
    }
  }

  end() {
    this.number += 1;
    if (this.skipping) {
      const s = this.skipping;
      this.skipping = null;
      this.onLine(this.number, null, s);
      return;
    }
    let line = Buffer.concat(this.parts);
    this.parts = [];
    this.len = 0;
    if (line.length && line[line.length - 1] === 13) line = line.subarray(0, line.length - 1);
    if (line.length > MAX_LINE_BYTES) {
      this.onLine(this.number, null, { bytes: line.length, head: line.subarray(0, OVERSIZED_HEAD_BYTES) });
      return;
    }
    this.onLine(this.number, line);
  }

  finish() {
    if (this.len > 0 || this.skipping) this.end();
  }
}

// ---------------------------------------------------------------------------
// The mapper: stream-json records to normalized messages, one run per turn.

class ClaudeMapper {
  constructor(emit, opts = {}) {
    this.emit = emit;
    this.resumedSession = !!opts.resumedSession;
    this.finished = false;
    this.turns = 0; // `result` records seen
    this.runOpen = false; // a record of a turn came since the last `result`
    this.session = null; // the session id announced last
    this.sessionInRun = false;
    this.msg = null; // the API message being received: {id, streamed, texts, thoughts}
    this.tools = new Map(); // id -> {announced, ended}, per run
    this.lastTotalCost = null; // `total_cost_usd` of the previous result (a running total)
    this.resetInvalid();
  }

  resetInvalid() {
    this.invalid = [];
    this.invalidDropped = 0;
    this.invalidBytes = 0;
  }

  // A bad line, or a note about a line, kept for the run's `terminal.failed`, bounded.
  record(line, bytes, problem, raw) {
    if (this.invalid.length >= MAX_INVALID_LINES) {
      this.invalidDropped += 1;
      return;
    }
    const room = Math.min(Math.max(MAX_INVALID_BYTES - this.invalidBytes, 0), EXCERPT_BYTES);
    const excerpt = cut(raw.subarray(0, room).toString('utf8'), room);
    this.invalidBytes += Buffer.byteLength(excerpt);
    this.invalid.push({ line, bytes, problem, excerpt });
  }

  oversized(number, bytes, head) {
    this.record(number, bytes, `over the line cap of ${MAX_LINE_BYTES} bytes`, head);
  }

  // One complete stdout line (a Buffer, without its `\n`).
  line(n, raw) {
    if (this.finished) return;
    const bad = (problem) => this.record(n, raw.length, problem, raw);
    let first = -1;
    for (let i = 0; i < raw.length; i++) {
      const b = raw[i];
      if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0c && b !== 0x0d) { first = b; break; }
    }
    if (first < 0) return bad('empty line');
    let text;
    let lossy = false;
    try { text = utf8.decode(raw); } catch (_) { text = raw.toString('utf8'); lossy = true; }
    let rec;
    try { rec = JSON.parse(text); } catch (e) { return bad(`not JSON: ${e.message}`); }
    if (first !== 0x7b || !isObject(rec)) return bad('not a JSON object');
    // JSON whose strings hold invalid UTF-8 still says what happened: used, and noted.
    if (lossy) bad('invalid UTF-8, decoded lossily (U+FFFD); the record was used');
    this.dispatch(rec, bad);
  }

  dispatch(rec, bad) {
    if (!('type' in rec)) return bad('no "type"');
    const kind = rec.type;
    if (typeof kind !== 'string') return bad('"type" is not a string');
    // A subagent's records (the Task tool's own model calls and tools): its result says it.
    const subagent = rec.parent_tool_use_id !== undefined && rec.parent_tool_use_id !== null;
    switch (kind) {
      case 'system': {
        const sub = str(rec.subtype);
        if (sub === 'init') {
          this.runOpen = true;
          this.closeMessage();
          this.onInit(rec, bad);
        } else if (sub === 'api_retry') {
          this.runOpen = true;
          this.closeMessage();
          this.onRetry(rec);
        } else if (sub === null) {
          bad('`system` without a string `subtype`');
        } else if (!IGNORED_SYSTEM.has(sub)) {
          bad(`unknown system subtype ${JSON.stringify(sub)} (ignored)`);
        }
        return;
      }
      case 'stream_event':
      case 'assistant':
      case 'user':
        if (subagent) return;
        this.runOpen = true;
        if (kind === 'stream_event') this.onStreamEvent(rec, bad);
        else if (kind === 'assistant') this.onAssistant(rec, bad);
        else this.onUser(rec, bad);
        return;
      case 'result':
        this.onResult(rec);
        return;
      default:
        if (!IGNORED_TYPES.has(kind)) bad(`unknown record type ${JSON.stringify(kind)} (ignored)`);
    }
  }

  onInit(rec, bad) {
    const id = str(rec.session_id);
    if (id === null) return bad('`system/init` without a string `session_id`');
    if (this.session === id) return; // the same session: announced once, not per turn
    if (this.sessionInRun) return bad('a second `system/init` with another session id in the same turn (ignored)');
    const resumed = this.resumedSession && this.session === null;
    this.session = id;
    this.sessionInRun = true;
    this.emit({ type: resumed ? 'session.resumed' : 'session.started', session_id: id });
  }

  onRetry(rec) {
    const num = (k) => count(rec[k]) || 0;
    const status = typeof rec.error_status === 'string' || typeof rec.error_status === 'number'
      ? String(rec.error_status) : 'stream'; // null: the stream was cut
    const error = str(rec.error) === null ? 'unknown' : rec.error;
    this.emit({
      type: 'retry.scheduled', source: 'pi', attempt: Math.min(num('attempt'), 0xffffffff),
      max_attempts: Math.min(num('max_retries'), 0xffffffff), delay_ms: num('retry_delay_ms'),
      error: `${status}: ${error}`,
    });
  }

  // The open API message if it is `id` (or either id is unknown); otherwise the open one
  // ends and a new one starts.
  message(id, streamed) {
    const m = this.msg;
    if (m && !(id === null || m.id === null || m.id === id)) this.closeMessage();
    if (!this.msg) this.msg = { id: null, streamed: false, texts: [], thoughts: [] };
    if (this.msg.id === null) this.msg.id = id;
    this.msg.streamed = this.msg.streamed || streamed;
    return this.msg;
  }

  // The API message ends: one thought per thinking block, in order (the record's text, the
  // deltas only when the record never came); empty ones are dropped.
  closeMessage() {
    const m = this.msg;
    this.msg = null;
    if (!m) return;
    for (const t of m.thoughts) {
      const text = t.record !== null ? t.record : t.deltas;
      if (text) this.emit({ type: 'assistant.thought', text });
    }
  }

  onStreamEvent(rec, bad) {
    const event = rec.event;
    if (!isObject(event)) return bad('`stream_event` without an object `event`');
    const apiId = str(rec.api_message_id);
    switch (event.type) {
      case 'message_start': {
        const id = apiId !== null ? apiId : (isObject(event.message) ? str(event.message.id) : null);
        const repeated = this.msg && this.msg.id !== null && id !== null && this.msg.id === id;
        if (!repeated) {
          this.closeMessage();
          this.message(id, true);
        }
        return;
      }
      case 'content_block_delta': {
        const index = count(event.index);
        const delta = event.delta;
        if (!isObject(delta)) return bad('`content_block_delta` without an object `delta`');
        if (delta.type === 'text_delta') {
          if (typeof delta.text !== 'string') return bad('`text_delta` whose `text` is not a string');
          const m = this.message(apiId, true);
          let block = null;
          for (let i = m.texts.length - 1; i >= 0; i--) {
            if (!m.texts[i].recorded && m.texts[i].index === index) { block = m.texts[i]; break; }
          }
          if (!block) {
            block = { index, emitted: '', recorded: false };
            m.texts.push(block);
          }
          if (delta.text) {
            block.emitted += delta.text;
            this.emit({ type: 'assistant', text: delta.text });
          }
        } else if (delta.type === 'thinking_delta') {
          if (typeof delta.thinking !== 'string') return bad('`thinking_delta` whose `thinking` is not a string');
          const m = this.message(apiId, true);
          let block = null;
          for (let i = m.thoughts.length - 1; i >= 0; i--) {
            if (m.thoughts[i].record === null && m.thoughts[i].index === index) { block = m.thoughts[i]; break; }
          }
          if (block) block.deltas += delta.thinking;
          else m.thoughts.push({ index, deltas: delta.thinking, record: null });
        }
        // input_json_delta, signature_delta: the records carry them whole.
        return;
      }
      case 'message_stop': {
        const m = this.msg;
        if (m && (apiId === null || m.id === null || m.id === apiId)) this.closeMessage();
        return;
      }
      default:
        // content_block_start/stop, message_delta, unknown events: nothing to take.
    }
  }

  onAssistant(rec, bad) {
    // Claude's own error text in a synthetic message: the `result` that follows says it.
    if (rec.is_api_error_message === true) return;
    const message = rec.message;
    if (!isObject(message)) return bad('`assistant` without an object `message`');
    this.message(str(message.id), false);
    if (Array.isArray(message.content)) {
      for (const block of message.content) this.assistantBlock(block, bad);
    } else if (typeof message.content === 'string') {
      this.recordText(message.content, bad);
    }
  }

  assistantBlock(block, bad) {
    if (!isObject(block)) return;
    if (block.type === 'text') {
      if (typeof block.text === 'string') this.recordText(block.text, bad);
    } else if (block.type === 'thinking') {
      if (typeof block.thinking !== 'string') return;
      const m = this.message(null, false);
      const t = m.thoughts.find((x) => x.record === null);
      if (t) t.record = block.thinking;
      else m.thoughts.push({ index: null, deltas: '', record: block.thinking });
    } else if (block.type === 'tool_use') {
      if (typeof block.id !== 'string') return bad('`tool_use` block without a string `id`');
      this.announce(block.id, str(block.name) || '', block.input === undefined ? null : block.input);
    }
    // redacted_thinking, server tools, ...: nothing of ours.
  }

  // A text block of an `assistant` record adds what its deltas did not stream: the first text
  // block of the message no record has claimed yet is this record's.
  recordText(text, bad) {
    const m = this.message(null, false);
    const block = m.texts.find((b) => !b.recorded);
    if (!block) {
      m.texts.push({ index: null, emitted: text, recorded: true });
      if (text) this.emit({ type: 'assistant', text });
      return;
    }
    block.recorded = true;
    if (text.startsWith(block.emitted)) {
      const rest = text.slice(block.emitted.length);
      if (rest) {
        block.emitted += rest;
        this.emit({ type: 'assistant', text: rest });
      }
    } else {
      bad(`\`assistant\` text does not continue the streamed text (streamed ${Buffer.byteLength(block.emitted)} bytes, `
        + `final ${Buffer.byteLength(text)} bytes); nothing more emitted for this block`);
    }
  }

  onUser(rec, bad) {
    if (rec.isReplay === true) return;
    // Without partial messages nothing else says the API message ended.
    if (this.msg && !this.msg.streamed) this.closeMessage();
    const content = isObject(rec.message) ? rec.message.content : undefined;
    if (!Array.isArray(content)) return; // a plain user text (`[Request interrupted by user]`)
    for (const block of content) {
      if (!isObject(block) || block.type !== 'tool_result') continue;
      if (typeof block.tool_use_id !== 'string') {
        bad('`tool_result` block without a string `tool_use_id`');
        continue;
      }
      const value = block.content === undefined ? null : block.content;
      this.endTool(block.tool_use_id, block.is_error === true, value);
    }
  }

  tool(id) {
    let t = this.tools.get(id);
    if (!t) {
      t = { announced: false, ended: false };
      this.tools.set(id, t);
    }
    return t;
  }

  announce(id, name, args) {
    const t = this.tool(id);
    if (t.announced) return;
    t.announced = true;
    this.emit({ type: 'tool.call', id, name, arguments: args });
  }

  endTool(id, failed, value) {
    this.announce(id, '', null); // a damaged stream may have lost the call
    const t = this.tool(id);
    if (t.ended) return;
    t.ended = true;
    this.emit(failed ? { type: 'tool.failed', id, error: value } : { type: 'tool.completed', id, result: value });
  }

  // The turn's usage; `cost_usd` is what Claude's running `total_cost_usd` grew by.
  usage(rec) {
    const u = isObject(rec.usage) ? rec.usage : {};
    const n = (k) => count(u[k]) || 0;
    const usage = {
      input_tokens: n('input_tokens'), output_tokens: n('output_tokens'),
      cache_read_tokens: n('cache_read_input_tokens'), cache_write_tokens: n('cache_creation_input_tokens'),
    };
    usage.total_tokens = usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
    const total = typeof rec.total_cost_usd === 'number' && Number.isFinite(rec.total_cost_usd) && rec.total_cost_usd >= 0
      ? rec.total_cost_usd : null;
    let cost = 0;
    if (total !== null) {
      cost = this.lastTotalCost !== null && total >= this.lastTotalCost ? total - this.lastTotalCost : total;
      this.lastTotalCost = total;
    }
    usage.cost_usd = cost;
    return usage;
  }

  onResult(rec) {
    this.closeMessage();
    const usage = this.usage(rec);
    this.emit({ type: 'usage', ...usage });
    const subtype = str(rec.subtype);
    const failed = typeof rec.is_error === 'boolean' ? rec.is_error : subtype !== null && subtype !== 'success';
    if (!failed) {
      this.emit({ type: 'terminal.completed', stop_reason: str(rec.stop_reason) || 'none', usage });
    } else {
      let reason = 'model_error';
      let message;
      if (subtype === null || subtype === 'success') {
        // An API error after Claude's retries: its error text.
        message = str(rec.result) === null ? 'the turn failed (the result has no text)' : rec.result;
      } else if (subtype === 'error_during_execution') {
        // An interrupt (a control request, SIGINT, a deny with `interrupt: true`).
        reason = 'aborted';
        message = str(rec.terminal_reason) === null ? 'error_during_execution' : rec.terminal_reason;
      } else {
        let detail = str(rec.result);
        if (detail === null && Array.isArray(rec.errors)) {
          const errors = rec.errors.filter((e) => typeof e === 'string');
          if (errors.length) detail = errors.join('; ');
        }
        message = detail === null ? subtype : `${subtype}: ${detail}`;
      }
      this.emit(this.failure(reason, message, null, null));
    }
    this.endRun();
    this.turns += 1;
  }

  failure(reason, message, exit, stderrTail) {
    const f = { type: 'terminal.failed', reason, message };
    if (exit) f.exit = exit;
    if (stderrTail) f.stderr_tail = stderrTail;
    if (this.invalid.length) f.invalid_lines = this.invalid;
    if (this.invalidDropped) f.invalid_lines_dropped = this.invalidDropped;
    return f;
  }

  endRun() {
    this.runOpen = false;
    this.sessionInRun = false;
    this.msg = null;
    this.tools.clear();
    this.resetInvalid();
  }

  // The process ended. `end`: {exit: {code} | {signal} | null, stderrTail, cause:
  // 'eof' | 'cancelled' | {reason, message}}. A terminal only for a turn still open (or when
  // there was no turn at all): after the last `result`, every run already said how it ended.
  finish(end) {
    if (this.finished) return;
    this.finished = true;
    if (!this.runOpen && this.turns > 0) return;
    this.closeMessage();
    const exit = end.exit || null;
    if (end.cause === 'cancelled') {
      this.emit(exit ? { type: 'terminal.cancelled', exit } : { type: 'terminal.cancelled' });
      this.endRun();
      return;
    }
    let reason;
    let message;
    if (isObject(end.cause)) {
      ({ reason, message } = end.cause);
    } else {
      const last = (end.stderrTail || '').split('\n').map((l) => l.trim()).filter(Boolean).pop();
      const withStderr = (s) => (last ? `${s}: ${cut(last, EXCERPT_BYTES)}` : s);
      if (exit && exit.signal) {
        reason = 'process_signal';
        message = withStderr(`claude was killed by ${exit.signal} before the turn ended`);
      } else if (exit && typeof exit.code === 'number' && exit.code !== 0) {
        reason = 'process_exit';
        message = withStderr(`claude exited with code ${exit.code}`);
      } else {
        reason = 'missing_terminal_event';
        message = "claude's stdout ended without the `result` record that ends a turn";
      }
    }
    this.emit(this.failure(reason, message, exit, end.stderrTail || null));
    this.endRun();
  }
}

// ---------------------------------------------------------------------------
// Processes: everything the CLI starts inherits a marker; survivors are killed.

function marked(name, value) {
  const needle = Buffer.from(`\0${name}=${value}\0`);
  const pids = [];
  let entries;
  try { entries = fs.readdirSync('/proc'); } catch (_) { return pids; }
  for (const e of entries) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    try {
      const env = Buffer.concat([Buffer.from([0]), fs.readFileSync(`/proc/${e}/environ`)]);
      if (env.includes(needle)) pids.push(Number(e));
    } catch (_) { /* gone, or not ours to read */ }
  }
  return pids;
}

function killMarked(name, value) {
  for (const pid of marked(name, value)) {
    try { process.kill(pid, 'SIGKILL'); } catch (_) { /* gone */ }
  }
}

// ---------------------------------------------------------------------------
// One request: run the CLI, do the host's steps, print the normalized stream.

const emit = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');

function secretsOf(env) {
  return Object.entries(env || {})
    .filter(([k, v]) => /KEY|TOKEN|SECRET|PASSWORD/i.test(k) && typeof v === 'string' && v.length >= 4)
    .map(([, v]) => v);
}

function bridge(req) {
  const markerName = 'NODE_CLAUDE_BRIDGE_RUN';
  const marker = `${process.pid}-${Math.random().toString(16).slice(2)}`;
  const secrets = secretsOf(req.env);
  const mapper = new ClaudeMapper(emit);
  const steps = Array.isArray(req.rpc) ? req.rpc.slice() : [];
  let lines = 0;
  let stderr = Buffer.alloc(0);
  let exit = null; // how the CLI ended, once it did
  let cancelled = false; // our own caller asked us to stop
  let done = false;

  const child = spawn('claude', Array.isArray(req.argv) ? req.argv : DEFAULT_ARGV, {
    cwd: req.cwd || undefined,
    env: { ...process.env, ...(req.env || {}), [markerName]: marker },
    stdio: ['pipe', 'pipe', 'pipe'],
  });

  // Do every step whose stdout count has been reached, in order.
  function act() {
    while (!done && steps.length && (steps[0].after_stdout_lines || 0) <= lines) {
      const s = steps.shift();
      if (s.send !== undefined && s.send !== null) {
        child.stdin.write(JSON.stringify(s.send) + '\n');
      } else if (typeof s.send_raw === 'string') {
        child.stdin.write(s.send_raw + '\n');
      } else if (s.close_stdin) {
        child.stdin.end();
      } else if (s.signal) {
        try { process.kill(child.pid, s.signal); } catch (_) { /* gone, or not a signal */ }
      }
    }
  }

  const splitter = new LineSplitter((n, raw, over) => {
    if (raw) mapper.line(n, raw);
    else mapper.oversized(n, over.bytes, over.head);
    lines = n;
    act();
  });

  function stderrTail() {
    if (!stderr.length) return null;
    let tail = stderr.toString('utf8');
    for (const s of secrets) tail = tail.split(s).join('[REDACTED]');
    return tail;
  }

  function end(code, signal, cause) {
    if (done) return;
    done = true;
    clearTimeout(holdTimer);
    splitter.finish();
    if (!exit && (code !== null || signal)) exit = signal ? { signal } : { code };
    mapper.finish({ exit, stderrTail: stderrTail(), cause: cancelled ? 'cancelled' : cause });
    child.stdin.destroy();
    killMarked(markerName, marker);
  }

  let holdTimer = null;
  child.stdout.on('data', (chunk) => splitter.push(chunk));
  child.stderr.on('data', (chunk) => {
    stderr = Buffer.concat([stderr, chunk]);
    if (stderr.length > STDERR_TAIL_BYTES) stderr = stderr.subarray(stderr.length - STDERR_TAIL_BYTES);
  });
  child.stdin.on('error', () => { /* the CLI may end before it reads everything */ });
  child.on('error', (e) => {
    // Not started (no `claude` on PATH, ...): one terminal all the same.
    if (child.pid === undefined && !done) {
      done = true;
      emit({ type: 'terminal.failed', reason: 'spawn_failed', message: `claude: ${e.message}` });
    }
  });
  child.on('exit', (code, signal) => {
    exit = signal ? { signal } : { code };
    // A process the CLI left behind may hold its stdout open: not for long.
    holdTimer = setTimeout(() => {
      killMarked(markerName, marker);
      child.stdout.destroy();
      child.stderr.destroy();
    }, GRACE_MS);
    holdTimer.unref();
  });
  child.on('close', (code, signal) => end(code, signal, 'eof'));

  // Our caller cancels: SIGTERM to the CLI (Claude answers it by ending its tools and
  // exiting 143), SIGKILL after the grace; the open turn ends `terminal.cancelled`.
  const cancel = () => {
    if (done || cancelled) return;
    cancelled = true;
    try { child.kill('SIGTERM'); } catch (_) { /* gone */ }
    setTimeout(() => {
      try { child.kill('SIGKILL'); } catch (_) { /* gone */ }
      killMarked(markerName, marker);
    }, GRACE_MS).unref();
  };
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, cancel);

  if (child.pid !== undefined) act();
}

function main() {
  if (process.argv.includes('--capabilities')) {
    process.stdout.write(JSON.stringify({ protocol: 1, name: 'node-claude-bridge (example)', capabilities: CAPABILITIES }) + '\n');
    return;
  }
  let input = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d) => { input += d; });
  process.stdin.on('end', () => {
    let req;
    try { req = JSON.parse(input); } catch (e) {
      process.stderr.write(`node-claude-bridge: the request is not JSON: ${e.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (!isObject(req) || req.version !== 1) {
      process.stderr.write(`node-claude-bridge: request version ${isObject(req) ? req.version : '?'}, I read version 1\n`);
      process.exitCode = 2;
      return;
    }
    if (req.agent !== 'claude') {
      emit({ type: 'terminal.failed', reason: 'invalid_request', message: 'this bridge runs Claude Code (`"agent": "claude"`) only' });
      return;
    }
    bridge(req);
  });
}

if (require.main === module) main();
else module.exports = { ClaudeMapper, LineSplitter };
