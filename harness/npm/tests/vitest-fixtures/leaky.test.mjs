// Run by node/helper.test.js as `vitest run --dir vitest-fixtures`: a vitest test whose wrapper
// leaves a process behind (SECS, a unique sleep length, in the environment).
import { execFileSync } from 'node:child_process';
import { test } from 'vitest';
import { piWorld } from 'pi-harness';

test('a wrapper that leaves a process behind', (ctx) => {
  const w = piWorld(ctx, 'recorded/text_only.pi87');
  execFileSync('sh', ['-c', `(setsid sleep ${process.env.SECS} </dev/null >/dev/null 2>&1 &)`], { env: w.env });
});

test('a wrapper that cleans up', (ctx) => {
  piWorld(ctx, { cassette: 'recorded/text_only.pi87', allowUnused: true });
});
