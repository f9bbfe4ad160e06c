// Type-checked, never run: scripts/test-packages.sh runs `tsc --strict --noEmit` on this file
// against the installed pi-harness package. Every agent, option and variable a user reaches for
// must type; what the harness does not know must not.
import {
  AGENTS,
  IGNORE_VAR,
  PLAYED_VAR,
  PiWorld,
  UnusedCassetteError,
  caseName,
  piWorld,
  resolveCassette,
} from 'pi-harness';
import type { Agent, AgentSpec, IgnorableField, WorldOptions, WorldVariables } from 'pi-harness';

declare const t: { name: string; after(fn: () => unknown): unknown; diagnostic(message: string): void };

const agents: Agent[] = ['pi', 'claude', 'codex', 'gemini'];
for (const agent of agents) {
  const spec: AgentSpec = AGENTS[agent];
  const home: 'PI_CODING_AGENT_DIR' | 'CODEX_HOME' | 'GEMINI_CLI_HOME' | null = spec.homeVar;
  const key: 'ANTHROPIC_API_KEY' | 'CODEX_API_KEY' | 'GEMINI_API_KEY' | null = spec.apiKeyVar;
  void home;
  void key;
  piWorld(t, { cassette: 'codex/codex_text.cx0169', agent });
}

const gemini = piWorld(t, { agent: 'gemini' });
const vars: WorldVariables = gemini.variables;
const geminiHome: string | undefined = vars.GEMINI_CLI_HOME;
const codexHome: string | undefined = vars.CODEX_HOME;
const piHome: string = vars.PI_CODING_AGENT_DIR;
const keys: Array<string | undefined> = [vars.GEMINI_API_KEY, vars.CODEX_API_KEY, vars.ANTHROPIC_API_KEY];
const played: string = vars.FAKE_PI_PLAYED;
const ignored: string | undefined = vars.FAKE_PI_IGNORE;
void [geminiHome, codexHome, piHome, keys, played, ignored];

const fields: IgnorableField[] = ['model', 'env', 'stdin', 'provider'];
const options: WorldOptions = {
  cassette: 'cassettes/codex/codex_text.cx0169.cassette.jsonl',
  cassetteDir: 'cassettes',
  agent: 'codex',
  recordMode: 'once',
  ignore: fields,
  env: { CODEX_API_KEY: 'mine' },
  allowUnused: true,
};
const perModule = piWorld.configure({ agent: 'codex', ignore: 'model', env: { MY_SETTING: '1' } });
const w: PiWorld = perModule(t, options);
const byName: PiWorld = perModule(t);
const plain: PiWorld = piWorld('recorded/text_only.pi87');
const described: string = w.describe();
const setUp: Record<string, string> = byName.setUp;
const files: string[] = byName.setupFiles;
w.checkPlayed();
void [described, setUp, files, plain.close(), IGNORE_VAR, PLAYED_VAR, caseName('x'), resolveCassette('x')];
const e: Error = new UnusedCassetteError('x');
void e;

// @ts-expect-error: not an agent the harness knows
piWorld(t, { agent: 'opencode' });
// @ts-expect-error: not a record mode
piWorld(t, { recordMode: 'sometimes' });
