// A tiny wrapper around the pi coding agent CLI in JSON mode, as an integrator would write it:
// spawn `pi --mode json --provider P --model M PROMPT` (pi found on PATH), read its JSONL stdout
// line by line, collect the assistant's text and the tool calls, tell a finished run from a failed
// one, and cancel with SIGTERM. No dependencies beyond Node's standard library.
'use strict';

const { spawn } = require('node:child_process');
const readline = require('node:readline');

/**
 * Start pi. Returns a handle: `result` (a Promise of the outcome) and `cancel()`.
 *
 * options: provider, model, prompt (required); pi (default 'pi', looked up on env.PATH);
 * env (default process.env); cwd; onEvent(event, handle) for every JSON line;
 * timeoutMs (cancel after that long; the outcome then has timedOut: true);
 * graceMs (after SIGTERM, how long pi gets before SIGKILL; default 5000).
 *
 * Outcome: { ok, text, toolCalls: [{id, name, args}], completed (agent_end seen),
 *   stopReason, error, exitCode, signal, cancelled, timedOut, stderr, sessionId }
 */
function startPi(options) {
  const { provider, model, prompt } = options;
  const graceMs = options.graceMs ?? 5000;
  const args = ['--mode', 'json'];
  if (provider) args.push('--provider', provider);
  if (model) args.push('--model', model);
  args.push(prompt);

  // stdin must not stay open: pi reads it to EOF before it starts when it is not a terminal.
  const child = spawn(options.pi ?? 'pi', args, {
    env: options.env ?? process.env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });

  const out = {
    ok: false, text: '', toolCalls: [], completed: false, stopReason: null, error: null,
    exitCode: null, signal: null, cancelled: false, timedOut: false, stderr: '', sessionId: null,
  };
  let exited = false;
  let killTimer = null;

  const handle = {
    pid: child.pid,
    /** SIGTERM to pi (pi >= 0.87 kills its tool processes and exits 143); SIGKILL after graceMs. */
    cancel() {
      if (exited || out.cancelled) return;
      out.cancelled = true;
      child.kill('SIGTERM');
      killTimer = setTimeout(() => { if (!exited) child.kill('SIGKILL'); }, graceMs);
    },
    result: null,
  };

  const timeoutTimer = options.timeoutMs
    ? setTimeout(() => { out.timedOut = true; handle.cancel(); }, options.timeoutMs)
    : null;

  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => { out.stderr += chunk; });

  const lines = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
  lines.on('line', (line) => {
    let event;
    try { event = JSON.parse(line); } catch { return; } // pi may print a non-JSON line; skip it
    if (event === null || typeof event !== 'object') return;
    handleEvent(out, event);
    if (options.onEvent) options.onEvent(event, handle);
  });

  handle.result = new Promise((resolve, reject) => {
    child.on('error', (err) => { // pi not found, not executable
      exited = true;
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      reject(err);
    });
    child.on('exit', () => { exited = true; });
    // 'close': pi has exited and its stdout and stderr are drained.
    child.on('close', (code, signal) => {
      exited = true;
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      out.exitCode = code;
      out.signal = signal;
      // pi exits 0 also when the model call failed: the run is a success only when it reached
      // agent_end and the last assistant message did not stop on an error or an abort.
      out.ok = code === 0 && out.completed && !out.cancelled
        && out.stopReason !== 'error' && out.stopReason !== 'aborted';
      resolve(out);
    });
  });
  return handle;
}

function handleEvent(out, event) {
  switch (event.type) {
    case 'session':
      out.sessionId = event.id ?? null;
      break;
    case 'message_update': {
      const e = event.assistantMessageEvent;
      if (e && e.type === 'text_delta' && typeof e.delta === 'string') out.text += e.delta;
      break;
    }
    case 'tool_execution_start':
      out.toolCalls.push({ id: event.toolCallId, name: event.toolName, args: event.args });
      break;
    case 'message_end': {
      const m = event.message;
      if (m && m.role === 'assistant') {
        out.stopReason = m.stopReason ?? null;
        out.error = m.stopReason === 'error' ? (m.errorMessage ?? 'unknown error') : null;
      }
      break;
    }
    case 'agent_end':
      out.completed = true;
      break;
    default:
      break;
  }
}

/** Run pi to the end (see startPi for the options and the outcome). */
function runPi(options) {
  return startPi(options).result;
}

module.exports = { startPi, runPi };
