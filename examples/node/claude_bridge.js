// A tiny Claude Code bridge, as a project that runs Claude Code behind its own tool layer
// writes one: it drives `claude -p` in stream-json mode (the conversation on stdin, answers
// to the CLI's permission prompts on stdin), collects the answer and ends the CLI when the
// turn is over. No dependencies.
'use strict';

const { spawn } = require('node:child_process');
const readline = require('node:readline');

const ARGS = [
  '-p',
  '--input-format', 'stream-json',
  '--output-format', 'stream-json',
  '--verbose',
  '--include-partial-messages',
  '--permission-prompt-tool', 'stdio',
];

/**
 * Run one turn: send `prompt`, answer each `can_use_tool` prompt with `await canUseTool(request)`
 * (`{behavior: 'allow', updatedInput}` or `{behavior: 'deny', message}`), close stdin once the
 * turn's `result` came. Resolves to {text, toolCalls, permissions, result, exitCode, signal,
 * stderr, timedOut}. `timeoutMs`: SIGTERM, then SIGKILL 2 s later (the CLI kills its tools on
 * SIGTERM).
 */
function runClaude({ prompt, canUseTool = async () => ({ behavior: 'deny', message: 'not allowed' }), env = process.env, cwd, timeoutMs = 60000 }) {
  return new Promise((resolve, reject) => {
    const child = spawn('claude', ARGS, { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const out = { text: '', toolCalls: [], permissions: [], result: null, exitCode: null, signal: null, stderr: '', timedOut: false };
    let killTimer = null;
    const timer = setTimeout(() => {
      out.timedOut = true;
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), 2000);
    }, timeoutMs);
    const send = (obj) => {
      if (!child.stdin.destroyed) child.stdin.write(JSON.stringify(obj) + '\n');
    };
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.stdin.on('error', () => { /* the CLI may be gone: its exit says why */ });
    child.stderr.on('data', (d) => { out.stderr += d; });
    const lines = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
    lines.on('line', async (line) => {
      let rec;
      try { rec = JSON.parse(line); } catch { return; }
      if (rec.type === 'stream_event' && rec.event?.type === 'content_block_delta' && rec.event.delta?.type === 'text_delta') {
        out.text += rec.event.delta.text;
      } else if (rec.type === 'assistant') {
        for (const b of rec.message?.content || []) {
          if (b.type === 'tool_use') out.toolCalls.push({ id: b.id, name: b.name, input: b.input });
        }
      } else if (rec.type === 'control_request' && rec.request?.subtype === 'can_use_tool') {
        const decision = await canUseTool(rec.request);
        out.permissions.push({ tool: rec.request.tool_name, input: rec.request.input, decision });
        send({ type: 'control_response', response: { subtype: 'success', request_id: rec.request_id, response: decision } });
      } else if (rec.type === 'result') {
        out.result = rec;
        child.stdin.end(); // one turn per run: the CLI exits once stdin is closed
      }
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      out.exitCode = code;
      out.signal = signal;
      resolve(out);
    });
    send({ type: 'user', session_id: '', parent_tool_use_id: null, message: { role: 'user', content: prompt } });
  });
}

module.exports = { runClaude, ARGS };
