#!/usr/bin/env node
// A small implementation of the normalized stream (docs/normalized-stream.md) in Node, no
// dependencies. It reads a conformance request document on stdin, runs `pi --mode json`
// from PATH, and prints one normalized message per line on stdout.
//
// It is deliberately simple, not deliberately broken: it handles deltas, tools, pi's
// retries, exit codes and cancellation the obvious way. Thinking is handled the obvious way
// too (a thought when pi says the thinking block ended), which is not what the stream
// promises (thoughts come after the answer they belong to). Sessions, snapshot-only
// producers and bad-line diagnostics are left out, and `--capabilities` says so. Cancel
// signals pi's process group only, so a tool process in its own session can survive.
'use strict';

const { spawn } = require('child_process');

const CAPABILITIES = ['text', 'thinking', 'tools', 'retry', 'errors', 'cancel', 'pi-0.73', 'pi-0.87'];

if (process.argv.includes('--capabilities')) {
  process.stdout.write(JSON.stringify({ protocol: 1, name: 'node-impl (example)', capabilities: CAPABILITIES }) + '\n');
  process.exit(0);
}

function emit(msg) {
  process.stdout.write(JSON.stringify(msg) + '\n');
}

function isModern(version) {
  const [major, minor] = version.split('.').map((n) => parseInt(n, 10) || 0);
  return major >= 1 || minor >= 87;
}

function argvFor(req) {
  const modern = isModern(req.pi.version);
  const argv = ['--mode', 'json'];
  if (req.provider) argv.push('--provider', req.provider);
  if (req.model) argv.push('--model', req.model);
  if (req.thinking) argv.push('--thinking', req.thinking);
  if (req.no_session) argv.push('--no-session');
  if (req.session) {
    if (modern) argv.push('--session-id', req.session.id);
    else argv.push('--session', `${req.session.dir}/${req.session.id}.jsonl`);
  }
  const excluded = req.exclude_tools || [];
  if (req.tools) {
    const list = modern ? req.tools : req.tools.filter((t) => !excluded.includes(t));
    if (list.length) argv.push('--tools', list.join(','));
    else argv.push('--no-tools');
  }
  if (excluded.length) {
    if (modern) argv.push('--exclude-tools', excluded.join(','));
    else if (!req.tools) argv.push('--tools', ['read', 'bash', 'edit', 'write'].filter((t) => !excluded.includes(t)).join(','));
  }
  return argv;
}

function usageOf(u) {
  u = u || {};
  return {
    input_tokens: u.input || 0,
    output_tokens: u.output || 0,
    cache_read_tokens: u.cacheRead || 0,
    cache_write_tokens: u.cacheWrite || 0,
    total_tokens: u.totalTokens || 0,
    cost_usd: (u.cost && u.cost.total) || 0,
  };
}

function run(req) {
  const child = spawn('pi', argvFor(req), {
    cwd: req.cwd || undefined,
    env: { ...process.env, ...(req.env || {}), PI_OFFLINE: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true, // own process group, so a cancel reaches pi's group
  });
  child.stdin.end(req.prompt);

  let stderr = '';
  child.stderr.on('data', (d) => { stderr = (stderr + d.toString()).slice(-4096); });

  const total = usageOf({});
  let lastStop = null;
  let lastError = null;
  let ended = false;
  let cancelled = false;
  let sawMessage = false;
  let idleTimer = null;
  const called = new Set();
  const lastUpdate = new Map();

  function out(msg) {
    sawMessage = true;
    emit(msg);
    if (req.cancel_after_idle_ms != null && !cancelled) {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(cancel, req.cancel_after_idle_ms);
    }
  }

  function cancel() {
    cancelled = true;
    try { process.kill(-child.pid, 'SIGTERM'); } catch (_) { /* already gone */ }
    setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch (_) { /* gone */ } }, 2000).unref();
  }

  function announce(id, name, args) {
    if (called.has(id)) return;
    called.add(id);
    out({ type: 'tool.call', id, name, arguments: args === undefined ? null : args });
  }

  function onEvent(ev) {
    switch (ev.type) {
      case 'session':
        out({ type: req.session && req.session.resume ? 'session.resumed' : 'session.started', session_id: ev.id });
        break;
      case 'agent_start':
        ended = false;
        break;
      case 'message_update': {
        const a = ev.assistantMessageEvent || {};
        if (a.type === 'text_delta' && typeof a.delta === 'string' && a.delta !== '') out({ type: 'assistant', text: a.delta });
        if (a.type === 'thinking_end' && typeof a.content === 'string' && a.content !== '') out({ type: 'assistant.thought', text: a.content });
        if (a.type === 'toolcall_end' && a.toolCall) announce(a.toolCall.id, a.toolCall.name, a.toolCall.arguments);
        break;
      }
      case 'message_end': {
        const m = ev.message || {};
        if (m.role !== 'assistant') break;
        for (const block of m.content || []) {
          if (block.type === 'toolCall') announce(block.id, block.name, block.arguments);
        }
        const u = usageOf(m.usage);
        for (const k of Object.keys(total)) total[k] += u[k];
        out({ type: 'usage', ...u });
        lastStop = m.stopReason || null;
        lastError = m.errorMessage || null;
        break;
      }
      case 'tool_execution_start':
        announce(ev.toolCallId, ev.toolName, ev.args);
        break;
      case 'tool_execution_update': {
        const key = JSON.stringify(ev.partialResult);
        if (lastUpdate.get(ev.toolCallId) === key) break;
        lastUpdate.set(ev.toolCallId, key);
        out({ type: 'tool.update', id: ev.toolCallId, partial: ev.partialResult });
        break;
      }
      case 'tool_execution_end':
        announce(ev.toolCallId, ev.toolName, ev.args);
        out(ev.isError
          ? { type: 'tool.failed', id: ev.toolCallId, error: ev.result }
          : { type: 'tool.completed', id: ev.toolCallId, result: ev.result });
        break;
      case 'auto_retry_start':
        ended = false;
        out({
          type: 'retry.scheduled', source: 'pi', attempt: ev.attempt || 0, max_attempts: ev.maxAttempts || 0,
          delay_ms: ev.delayMs || 0, error: ev.errorMessage || '',
        });
        break;
      case 'agent_end':
        if (ev.willRetry !== true) ended = true;
        break;
      case 'agent_settled':
        ended = true;
        break;
      default:
        break;
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
      let ev;
      try { ev = JSON.parse(line); } catch (_) { continue; } // bad lines are skipped silently
      if (ev && typeof ev === 'object') onEvent(ev);
    }
  });

  // Start the idle clock even when pi prints nothing at all.
  if (req.cancel_after_idle_ms != null) {
    idleTimer = setTimeout(() => { if (!sawMessage) cancel(); }, 10 * req.cancel_after_idle_ms);
  }

  child.on('close', (code, signal) => {
    clearTimeout(idleTimer);
    if (buf.trim() !== '') { try { onEvent(JSON.parse(buf)); } catch (_) { /* skipped */ } }
    const exit = signal ? { signal } : { code };
    if (cancelled) {
      emit({ type: 'terminal.cancelled', exit });
    } else if (ended && lastStop === 'error') {
      emit({ type: 'terminal.failed', reason: 'model_error', message: lastError || 'model error', exit });
    } else if (ended && lastStop === 'aborted') {
      emit({ type: 'terminal.failed', reason: 'aborted', message: 'aborted', exit });
    } else if (ended) {
      emit({ type: 'terminal.completed', stop_reason: lastStop || 'none', usage: total });
    } else if (signal) {
      emit({ type: 'terminal.failed', reason: 'process_signal', message: `pi was killed by ${signal}`, exit });
    } else if (code !== 0) {
      const tail = stderr === '' ? undefined : stderr;
      emit({ type: 'terminal.failed', reason: 'process_exit', message: `pi exited with code ${code}`, exit, stderr_tail: tail });
    } else {
      emit({ type: 'terminal.failed', reason: 'missing_terminal_event', message: 'stdout ended early', exit });
    }
  });
  child.on('error', (e) => {
    emit({ type: 'terminal.failed', reason: 'spawn_failed', message: String(e) });
    process.exitCode = 0;
  });
}

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => { input += d; });
process.stdin.on('end', () => {
  let req;
  try {
    req = JSON.parse(input);
  } catch (e) {
    process.stderr.write(`node-impl: the request is not JSON: ${e.message}\n`);
    process.exit(2);
  }
  if (req.version !== 1) {
    process.stderr.write(`node-impl: request version ${req.version}, I read version 1\n`);
    process.exit(2);
  }
  run(req);
});
