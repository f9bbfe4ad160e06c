#!/usr/bin/env node
// An RPC client for pi (`pi --mode rpc`) in Node, no dependencies, scored by the same suite:
// for an RPC case the request document's `rpc` steps say what to send and when (after how
// many stdout lines of pi's); this client writes them, routes pi's responses by its own ids,
// and prints the normalized messages of every run a prompt started (docs/normalized-stream.md).
// A json-mode case is handed to the json-mode example (../node-impl/impl.js).
//
// Simple on purpose: text deltas, tool calls, updates and results, usage, pi's retries, and
// the end of a run at `agent_settled`. What it leaves out shows in the report: thoughts, and
// pi 0.87.1's way of closing an aborted tool run (an error message, no `aborted` flag).
'use strict';

const { spawn } = require('child_process');
const path = require('path');

const CAPABILITIES = ['text', 'tools', 'retry', 'errors', 'cancel', 'rpc', 'pi-0.73', 'pi-0.87', 'pi-1.5'];

if (process.argv.includes('--capabilities')) {
  process.stdout.write(JSON.stringify({ protocol: 1, name: 'node-rpc-impl (example)', capabilities: CAPABILITIES }) + '\n');
  process.exit(0);
}

const emit = (msg) => process.stdout.write(JSON.stringify(msg) + '\n');

function usageOf(u) {
  u = u || {};
  return {
    input_tokens: u.input || 0, output_tokens: u.output || 0, cache_read_tokens: u.cacheRead || 0,
    cache_write_tokens: u.cacheWrite || 0, total_tokens: u.totalTokens || 0, cost_usd: (u.cost && u.cost.total) || 0,
  };
}

// One run: what a prompt pi accepted streams until pi settles it.
function newRun() {
  return { total: usageOf({}), lastStop: null, lastError: null, aborted: false, called: new Set(), lastUpdate: new Map() };
}

function rpc(req) {
  const argv = ['--mode', 'rpc'];
  if (req.provider) argv.push('--provider', req.provider);
  if (req.model) argv.push('--model', req.model);
  if (req.no_session) argv.push('--no-session');
  const child = spawn('pi', argv, {
    cwd: req.cwd || undefined,
    env: { ...process.env, ...(req.env || {}), PI_OFFLINE: '1' },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  let lines = 0;
  let nextId = 0;
  const prompts = new Set(); // ids of our prompt commands not answered yet
  let run = null;
  let closed = false;
  const steps = req.rpc.slice();

  function announce(id, name, args) {
    if (run.called.has(id)) return;
    run.called.add(id);
    emit({ type: 'tool.call', id, name, arguments: args === undefined ? null : args });
  }

  function endRun() {
    const r = run;
    run = null;
    if (r.aborted) emit({ type: 'terminal.failed', reason: 'aborted', message: r.lastError || 'aborted' });
    else if (r.lastStop === 'error') emit({ type: 'terminal.failed', reason: 'model_error', message: r.lastError || 'model error' });
    else if (r.lastStop === 'aborted') emit({ type: 'terminal.failed', reason: 'aborted', message: r.lastError || 'aborted' });
    else emit({ type: 'terminal.completed', stop_reason: r.lastStop || 'none', usage: r.total });
  }

  function onEvent(ev) {
    if (ev.type === 'response') {
      if (prompts.has(ev.id)) {
        prompts.delete(ev.id);
        if (ev.success) run = newRun();
      }
      return;
    }
    if (!run) return;
    switch (ev.type) {
      case 'message_update': {
        const a = ev.assistantMessageEvent || {};
        if (a.type === 'text_delta' && a.delta) emit({ type: 'assistant', text: a.delta });
        if (a.type === 'toolcall_end' && a.toolCall) announce(a.toolCall.id, a.toolCall.name, a.toolCall.arguments);
        break;
      }
      case 'message_end': {
        const m = ev.message || {};
        if (m.role !== 'assistant') break;
        for (const b of m.content || []) if (b.type === 'toolCall') announce(b.id, b.name, b.arguments);
        const u = usageOf(m.usage);
        for (const k of Object.keys(run.total)) run.total[k] += u[k];
        emit({ type: 'usage', ...u });
        run.lastStop = m.stopReason || null;
        run.lastError = m.errorMessage || null;
        break;
      }
      case 'tool_execution_start':
        announce(ev.toolCallId, ev.toolName, ev.args);
        break;
      case 'tool_execution_update': {
        const key = JSON.stringify(ev.partialResult);
        if (run.lastUpdate.get(ev.toolCallId) === key) break;
        run.lastUpdate.set(ev.toolCallId, key);
        emit({ type: 'tool.update', id: ev.toolCallId, partial: ev.partialResult });
        break;
      }
      case 'tool_execution_end':
        emit(ev.isError ? { type: 'tool.failed', id: ev.toolCallId, error: ev.result }
          : { type: 'tool.completed', id: ev.toolCallId, result: ev.result });
        break;
      case 'auto_retry_start':
        emit({ type: 'retry.scheduled', source: 'pi', attempt: ev.attempt || 0, max_attempts: ev.maxAttempts || 0,
          delay_ms: ev.delayMs || 0, error: ev.errorMessage || '' });
        break;
      case 'agent_settled':
        if (ev.aborted) run.aborted = true;
        endRun();
        break;
      default:
        break;
    }
  }

  // Do every step whose stdout count has been reached.
  function act() {
    while (steps.length && steps[0].after_stdout_lines <= lines) {
      const s = steps.shift();
      if (s.send !== undefined) {
        const cmd = { ...s.send };
        if (cmd && typeof cmd === 'object' && !Array.isArray(cmd)) {
          nextId += 1;
          cmd.id = `node-${nextId}`;
          if (cmd.type === 'prompt' && !cmd.streamingBehavior) prompts.add(cmd.id);
        }
        child.stdin.write(JSON.stringify(cmd) + '\n');
      } else if (s.send_raw !== undefined) {
        child.stdin.write(s.send_raw + '\n');
      } else if (s.close_stdin) {
        closed = true;
        child.stdin.end();
      } else if (s.signal) {
        try { process.kill(child.pid, s.signal); } catch (_) { /* gone */ }
      }
    }
  }

  let buf = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    buf += chunk;
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      lines += 1;
      try { const ev = JSON.parse(line); if (ev && typeof ev === 'object') onEvent(ev); } catch (_) { /* skipped */ }
      act();
    }
  });
  child.stdin.on('error', () => { /* pi may exit before reading everything */ });
  child.on('close', (code, signal) => {
    if (run) {
      const exit = signal ? { signal } : { code };
      if (closed) emit({ type: 'terminal.cancelled', exit });
      else emit({ type: 'terminal.failed', reason: signal ? 'process_signal' : 'process_exit', message: `pi exited (${signal || code})`, exit });
    }
  });
  act();
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  let req;
  try { req = JSON.parse(input); } catch (e) {
    process.stderr.write(`node-rpc-impl: the request is not JSON: ${e.message}\n`);
    process.exit(2);
  }
  if (!req.rpc) {
    // A json-mode case: the json-mode example runs it.
    const json = spawn(process.execPath, [path.join(__dirname, '..', 'node-impl', 'impl.js')], { stdio: ['pipe', 'inherit', 'inherit'] });
    json.stdin.end(input);
    json.on('close', (code) => process.exit(code === null ? 1 : code));
    return;
  }
  rpc(req);
});
