// A minimal wrapper, as a user would write one: `pi --mode json` found on PATH, the assistant's
// text deltas joined, the exit status kept.
'use strict';

const { spawn } = require('node:child_process');

function ask(prompt, { model = 'fake-model', env = process.env } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn('pi', ['--mode', 'json', '--provider', 'fake', '--model', model, prompt], {
      env, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', reject);
    p.on('close', (code) => {
      let text = '';
      for (const line of out.split('\n').filter(Boolean)) {
        const e = JSON.parse(line);
        const d = e.assistantMessageEvent || {};
        if (e.type === 'message_update' && d.type === 'text_delta') text += d.delta;
      }
      resolve({ code, text, stderr: err, pid: p.pid });
    });
  });
}

module.exports = { ask };
