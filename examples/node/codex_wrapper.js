// A tiny wrapper around OpenAI's Codex CLI (`codex exec --json`), as an integrator would write it:
// spawn `codex exec --json --skip-git-repo-check [-m MODEL] PROMPT` (codex found on PATH, its
// settings in CODEX_HOME/config.toml), read its JSONL stdout line by line, collect the agent's
// messages and the commands it ran, tell a finished run from a failed one, and cancel without
// leaving a process behind. No dependencies beyond Node's standard library.
//
// What Codex does that a wrapper must know (measured on 0.169.0):
// - there are no text deltas: the whole answer is one `agent_message` item when the model is done;
// - a model error is `turn.failed` (exit 1); a run that ends without `turn.completed` failed;
// - `codex` is a node wrapper around a native binary, and the commands run in a session of their
//   own under the native binary. SIGKILL of the wrapper alone orphans both: so the wrapper starts
//   codex in a process group of its own and signals the group;
// - SIGTERM kills a command's shell but not what that shell started (a `sleep` under `bash -c`
//   survives, orphaned); SIGINT takes the whole command tree down and exits 1. So cancel is
//   SIGINT to the group, then SIGKILL if codex is still there.
'use strict';

const { spawn } = require('node:child_process');
const readline = require('node:readline');

/**
 * Start codex. Returns a handle: `result` (a Promise of the outcome), `cancel()` and `pid`.
 *
 * options: prompt (required); model; codex (default 'codex', looked up on env.PATH);
 * env (default process.env); cwd; onEvent(event, handle) for every JSON line;
 * timeoutMs (cancel after that long; the outcome then has timedOut: true);
 * graceMs (after SIGINT, how long codex gets before SIGKILL; default 5000).
 *
 * Outcome: { ok, text, commands: [{id, command, exitCode, output}], completed (turn.completed
 *   seen), error, usage, exitCode, signal, cancelled, timedOut, stderr, threadId }
 */
function startCodex(options) {
  const graceMs = options.graceMs ?? 5000;
  const args = ['exec', '--json', '--skip-git-repo-check'];
  if (options.model) args.push('--model', options.model);
  // A prompt starting with '-' would be read as an option: end the options first.
  args.push('--', options.prompt);

  const child = spawn(options.codex ?? 'codex', args, {
    env: options.env ?? process.env,
    cwd: options.cwd,
    stdio: ['ignore', 'pipe', 'pipe'], // stdin /dev/null: codex would wait for more input otherwise
    detached: true, // its own process group, signalled as a whole
  });

  const out = {
    ok: false, text: '', commands: [], completed: false, error: null, usage: null,
    exitCode: null, signal: null, cancelled: false, timedOut: false, stderr: '', threadId: null,
  };
  let exited = false;
  let killTimer = null;
  const signalGroup = (sig) => {
    try { process.kill(-child.pid, sig); } catch { /* already gone */ }
  };

  const handle = {
    pid: child.pid,
    /** SIGINT to codex's process group (it kills its commands' trees, exit 1); SIGKILL after graceMs. */
    cancel() {
      if (exited || out.cancelled) return;
      out.cancelled = true;
      signalGroup('SIGINT');
      killTimer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
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
    try { event = JSON.parse(line); } catch { return; }
    if (event === null || typeof event !== 'object') return;
    handleEvent(out, event);
    if (options.onEvent) options.onEvent(event, handle);
  });

  handle.result = new Promise((resolve, reject) => {
    child.on('error', (err) => { // codex not found, not executable
      exited = true;
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      reject(err);
    });
    child.on('exit', () => { exited = true; });
    child.on('close', (code, signal) => {
      exited = true;
      clearTimeout(timeoutTimer);
      // The group may still hold an orphan (the wrapper died alone): make sure of it.
      signalGroup('SIGKILL');
      clearTimeout(killTimer);
      out.exitCode = code;
      out.signal = signal;
      out.ok = code === 0 && out.completed && out.error === null && !out.cancelled;
      resolve(out);
    });
  });
  return handle;
}

function handleEvent(out, event) {
  const item = event.item;
  switch (event.type) {
    case 'thread.started':
      out.threadId = event.thread_id ?? null;
      break;
    case 'item.started':
      if (item && item.type === 'command_execution') {
        out.commands.push({ id: item.id, command: item.command, exitCode: null, output: null });
      }
      break;
    case 'item.completed':
      if (item && item.type === 'agent_message') {
        out.text += item.text ?? '';
      } else if (item && item.type === 'command_execution') {
        let c = out.commands.find((x) => x.id === item.id);
        if (!c) { c = { id: item.id, command: item.command }; out.commands.push(c); }
        c.exitCode = item.exit_code ?? null;
        c.output = item.aggregated_output ?? null;
      }
      break;
    case 'turn.completed':
      out.completed = true;
      out.usage = event.usage ?? null;
      break;
    case 'turn.failed':
      out.error = (event.error && event.error.message) || 'turn failed';
      break;
    default:
      break;
  }
}

/** Run codex to the end (see startCodex for the options and the outcome). */
function runCodex(options) {
  return startCodex(options).result;
}

module.exports = { startCodex, runCodex };
