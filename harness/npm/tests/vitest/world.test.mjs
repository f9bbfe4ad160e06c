// The Node helper under vitest: the same world, closed by the test context's onTestFinished.
import fs from 'node:fs';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { test, expect } from 'vitest';
import { piWorld, PiWorld, binaries, LeftoverError } from 'pi-harness';

const { ask } = createRequire(import.meta.url)('../wrapper.js');

test('ten lines replay a bundled cassette through a wrapper', async (ctx) => {
  const w = piWorld(ctx, 'recorded/text_only.pi87');
  const r = await ask('Say hello.', { env: w.env });
  expect(r.code, r.stderr).toBe(0);
  expect(r.text).toBe('Hello, world!');
});

test('the pi the wrapper starts is the native fake-pi', async (ctx) => {
  const w = piWorld(ctx, 'faults/hang_after_output.pi87');
  const p = spawn('pi', ['--mode', 'json', '--provider', 'fake', '--model', 'fake-model', 'list files'], {
    env: w.env, stdio: ['ignore', 'pipe', 'ignore'],
  });
  await new Promise((resolve) => p.stdout.once('data', resolve));
  try {
    expect(fs.readlinkSync(`/proc/${p.pid}/exe`)).toBe(binaries().fakePi);
  } finally {
    p.kill('SIGKILL');
    await new Promise((resolve) => p.once('close', resolve));
  }
});

test('a leftover is named and killed', async () => {
  const w = new PiWorld({ cassette: 'recorded/text_only.pi87', grace: 100 });
  const secs = `${300 + Math.floor(Math.random() * 1000)}.${process.pid}`;
  execFileSync('sh', ['-c', `(setsid sleep ${secs} </dev/null >/dev/null 2>&1 &)`], { env: w.env });
  const e = await w.close().then(() => null, (err) => err);
  expect(e).toBeInstanceOf(LeftoverError);
  expect(e.message).toMatch(new RegExp(`leftover: \\d+ sleep ${secs.replace('.', '\\.')} \\(session`));
  expect(w.alive()).toEqual([]);
});
