// A tiny wrapper around Google's Gemini CLI (`gemini --output-format stream-json`), as an
// integrator would write it: spawn `gemini --output-format stream-json [-m MODEL]
// [--approval-mode MODE]` with the prompt on stdin (gemini found on PATH, its settings in
// $GEMINI_CLI_HOME/.gemini or $HOME/.gemini), read its JSONL stdout line by line, collect the
// answer and the tools it ran, tell a finished run from a failed one, and cancel without leaving
// a process behind. No dependencies beyond Node's standard library.
//
// What Gemini CLI does that a wrapper must know (measured on 0.61.0):
// - the answer comes in pieces as it streams (`message` events with `delta: true`): join them;
// - the outcome is the `result` event, not the exit status: a model error is `result` with
//   `status: "error"` and an exit status of HTTP status & 255 (a 400 gives 144, a 500 gives 244);
//   a run that ends without `result` did not finish, even with exit 0;
// - `gemini` relaunches itself (a node parent and a node child): the parent ignores SIGTERM and
//   SIGINT entirely, so a signal to it alone does nothing. A signal to the whole process group
//   ends the run with exit 0 (no `result`), and the tool's shell tree, started in a session of
//   its own, is left running, orphaned. So cancel signals the group, and then kills the tool
//   trees it saw under gemini (found in /proc: Linux).
'use strict';

const fs = require('node:fs');
const { spawn } = require('node:child_process');
const readline = require('node:readline');

/**
 * Start gemini. Returns a handle: `result` (a Promise of the outcome), `cancel()` and `pid`.
 *
 * options: prompt (required); model; approvalMode ('yolo' lets a headless run use tools that
 * would ask first); gemini (default 'gemini', looked up on env.PATH); env (default
 * process.env); cwd; onEvent(event, handle) for every JSON line; timeoutMs (cancel after that
 * long; the outcome then has timedOut: true); graceMs (after SIGTERM, how long gemini gets
 * before SIGKILL; default 5000).
 *
 * Outcome: { ok, text, tools: [{id, name, parameters, status, output}], completed (a `result`
 *   with status success), error, stats, exitCode, signal, cancelled, timedOut, stderr,
 *   sessionId }
 */
function startGemini(options) {
  const graceMs = options.graceMs ?? 5000;
  const args = ['--output-format', 'stream-json'];
  if (options.model) args.push('--model', options.model);
  if (options.approvalMode) args.push('--approval-mode', options.approvalMode);

  const child = spawn(options.gemini ?? 'gemini', args, {
    env: options.env ?? process.env,
    cwd: options.cwd,
    // The prompt on stdin (read whole when stdin is not a terminal): a prompt starting with
    // '-' cannot be mistaken for an option.
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true, // its own process group, signalled as a whole
  });
  child.stdin.on('error', () => { /* gemini gone before reading: the outcome says why */ });
  child.stdin.end(options.prompt);

  const out = {
    ok: false, text: '', tools: [], completed: false, error: null, stats: null,
    exitCode: null, signal: null, cancelled: false, timedOut: false, stderr: '', sessionId: null,
  };
  let exited = false;
  let killTimer = null;
  // Tool process groups seen under gemini: they leave its group (a session of their own).
  const toolGroups = new Set();
  const signalGroup = (sig) => {
    try { process.kill(-child.pid, sig); } catch { /* already gone */ }
  };
  const killTools = () => {
    for (const g of toolGroups) {
      try { process.kill(-g, 'SIGKILL'); } catch { /* already gone */ }
    }
  };

  const handle = {
    pid: child.pid,
    /** SIGTERM to gemini's process group (exit 0 without `result`); SIGKILL after graceMs. */
    cancel() {
      if (exited || out.cancelled) return;
      out.cancelled = true;
      for (const g of sessionGroupsBelow(child.pid)) toolGroups.add(g);
      signalGroup('SIGTERM');
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
    try { event = JSON.parse(line); } catch { return; } // gemini may print a warning on stdout
    if (event === null || typeof event !== 'object') return;
    handleEvent(out, event);
    if (event.type === 'tool_use') {
      // The tool's shell starts in a session of its own: remember its group while gemini is
      // its parent, to take it down if the run is cancelled.
      for (const g of sessionGroupsBelow(child.pid)) toolGroups.add(g);
    }
    if (options.onEvent) options.onEvent(event, handle);
  });

  handle.result = new Promise((resolve, reject) => {
    child.on('error', (err) => { // gemini not found, not executable
      exited = true;
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      reject(err);
    });
    child.on('exit', () => { exited = true; });
    child.on('close', (code, signal) => {
      exited = true;
      clearTimeout(timeoutTimer);
      clearTimeout(killTimer);
      signalGroup('SIGKILL'); // the relaunched child, if the parent went first
      if (out.cancelled || !out.completed) killTools();
      out.exitCode = code;
      out.signal = signal;
      out.ok = out.completed && out.error === null && !out.cancelled;
      resolve(out);
    });
  });
  return handle;
}

function handleEvent(out, event) {
  switch (event.type) {
    case 'init':
      out.sessionId = event.session_id ?? null;
      break;
    case 'message':
      if (event.role === 'assistant') out.text += event.content ?? '';
      break;
    case 'tool_use':
      out.tools.push({
        id: event.tool_id, name: event.tool_name, parameters: event.parameters ?? null,
        status: null, output: null,
      });
      break;
    case 'tool_result': {
      let t = out.tools.find((x) => x.id === event.tool_id);
      if (!t) { t = { id: event.tool_id, name: null, parameters: null }; out.tools.push(t); }
      t.status = event.status ?? null;
      t.output = event.output ?? null;
      break;
    }
    case 'result':
      out.stats = event.stats ?? null;
      if (event.status === 'success') {
        out.completed = true;
      } else {
        const e = event.error;
        out.error = (e && (e.message || e.type)) || `result status ${event.status}`;
      }
      break;
    default:
      break;
  }
}

/** The process groups of the sessions started below `pid` (Linux /proc; empty elsewhere). */
function sessionGroupsBelow(pid) {
  let stats;
  try {
    stats = fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map((d) => {
      try {
        const s = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
        const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
        return { pid: Number(d), ppid: Number(f[1]), pgid: Number(f[2]), sid: Number(f[3]) };
      } catch { return null; }
    }).filter(Boolean);
  } catch { return []; }
  const below = new Set([pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of stats) {
      if (!below.has(p.pid) && below.has(p.ppid)) { below.add(p.pid); grew = true; }
    }
  }
  return stats.filter((p) => below.has(p.pid) && p.pid !== pid && p.sid === p.pid).map((p) => p.pgid);
}

/** Run gemini to the end (see startGemini for the options and the outcome). */
function runGemini(options) {
  return startGemini(options).result;
}

module.exports = { startGemini, runGemini };
