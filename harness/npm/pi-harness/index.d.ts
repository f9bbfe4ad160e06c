// Types of the pi-harness Node helper (index.js).

/** The environment variable carrying a world's unique marker. */
export const MARKER_VAR: 'PI_HARNESS_TEST_MARKER';
/** The environment variable naming fake-pi's report file. */
export const REPORT_VAR: 'FAKE_PI_REPORT';
/** Set to a directory, a failing test's world writes its replay page there (`pi-harness report --html`). */
export const HTML_VAR: 'PI_HARNESS_HTML';
/** Record modes: `none` (replay only; always when CI is set), `once` (record a missing cassette), `all` (record again, changes wait for review). */
export const RECORD_MODES: readonly ['none', 'once', 'all'];
/** This package's version: the workspace's, as `pi-harness --version` says. */
export const version: string;

/** The environment variable naming the fields fake-pi does not compare (`ignore`). */
export const IGNORE_VAR: 'FAKE_PI_IGNORE';
/** The environment variable naming fake-pi's trace of the starts that played (the unused check). */
export const PLAYED_VAR: 'FAKE_PI_PLAYED';

/** The agent CLIs the harness knows (`pi-harness agents`): the name fake-pi takes on PATH. */
export type Agent = 'pi' | 'claude' | 'codex' | 'gemini';
export type RecordMode = (typeof RECORD_MODES)[number];

/** One agent's row: its display name, its home variable and the variable it reads its key from. */
export interface AgentSpec {
  readonly displayName: string;
  readonly homeVar: 'PI_CODING_AGENT_DIR' | 'CODEX_HOME' | 'GEMINI_CLI_HOME' | null;
  readonly apiKeyVar: 'ANTHROPIC_API_KEY' | 'CODEX_API_KEY' | 'GEMINI_API_KEY' | null;
}
/** Every agent the harness knows, by name. */
export const AGENTS: Readonly<Record<Agent, AgentSpec>>;

/**
 * A field fake-pi can be told not to compare at replay: the effective values (`model`,
 * `provider`, `thinking`, `tools`, `prompt`, `session`, ...), `env` (the variables the recording
 * needed set) and `stdin` (a terminal or a pipe).
 */
export type IgnorableField =
  | 'mode' | 'provider' | 'model' | 'thinking' | 'tools' | 'system_prompt' | 'prompt' | 'follow_ups'
  | 'session' | 'env' | 'stdin' | (string & {});

/** The variables a world sets (its `variables`), those of every agent among them. */
export interface WorldVariables {
  PATH: string;
  FAKE_PI_CASSETTE: string;
  FAKE_PI_SPEED: string;
  FAKE_PI_REPORT: string;
  FAKE_PI_PLAYED: string;
  PI_HARNESS_TEST_MARKER: string;
  /** pi's agent dir (the world's agent dir): settings.json with the recorded model. */
  PI_CODING_AGENT_DIR: string;
  /** Codex's home (a Codex cassette): config.toml with the recorded model and provider. */
  CODEX_HOME?: string;
  /** Gemini CLI's home (a Gemini CLI cassette): .gemini/settings.json as recorded. */
  GEMINI_CLI_HOME?: string;
  /** The dummy key a Claude Code cassette's call needs (unless the test's environment has one). */
  ANTHROPIC_API_KEY?: string;
  /** The dummy key a Codex cassette's call needs. */
  CODEX_API_KEY?: string;
  /** The dummy key a Gemini CLI cassette's call needs. */
  GEMINI_API_KEY?: string;
  /** The fields not compared (`ignore`). */
  FAKE_PI_IGNORE?: string;
  /** Set when PI_HARNESS_HTML asks for replay pages. */
  FAKE_PI_TIMELINE?: string;
  [name: string]: string | undefined;
}

export interface WorldOptions {
  /**
   * A cassette file (or a directory of runs, one per start), or a name in the bundled corpus in
   * any form (`codex/codex_text.cx0169`, `cassettes/codex/codex_text.cx0169.cassette.jsonl`).
   * Default, with a test context: `CASSETTE_DIR/MODULE/TEST` (named after the test).
   */
  cassette?: string;
  /** Where a cassette named after its test is (default `cassettes` beside the test file). */
  cassetteDir?: string;
  /** Variables of the test's own: they win over what the cassette sets up (a home of its own gets no file). */
  env?: Record<string, string>;
  /** Fields fake-pi does not compare for this world (FAKE_PI_IGNORE), the file untouched. */
  ignore?: IgnorableField | IgnorableField[];
  /**
   * Let a cassette that was never replayed (or a directory of runs replayed in part) pass close().
   * Default: false for a world of a test context, true for `new PiWorld(...)`.
   */
  allowUnused?: boolean;
  /** The name fake-pi gets on the private PATH; default: from the cassette's header. */
  agent?: Agent;
  /** FAKE_PI_SPEED: `0` (default) instant, `1` recorded timing. */
  speed?: string | number;
  /** In the temp dir's name and the marker; default: the test's name, else `test`. */
  name?: string;
  /** Milliseconds processes get to go away before they count as left over (default 500). */
  grace?: number;
  /** Default `$PI_HARNESS_RECORD_MODE`, else `none`; `none` whenever CI is set. */
  recordMode?: RecordMode;
  /** The LLM script a recording plays (default `NAME.llm.json` beside `NAME.cassette.jsonl`). */
  script?: string;
  /**
   * The real CLI a recording runs, of the agent (`agent`, else the cassette's, else pi; Codex and
   * Gemini CLI too; Claude Code is recorded with `pi-harness record --client-script`): default
   * `$PI_HARNESS_REAL_<AGENT>` (`PI_HARNESS_REAL_PI`, `PI_HARNESS_REAL_CODEX`, ...), else `pi-harness install AGENT VERSION`.
   */
  realPi?: string;
  /** The version `pi-harness install` fetches when no real CLI is named (pi: `$PI_HARNESS_PI_VERSION`, else 1.5.2; the others: the newest pinned). */
  piVersion?: string;
}

/** One process in a leftover report. */
export interface Proc {
  pid: number;
  ppid: number;
  sid: number;
  state: string;
  /** Start time, in clock ticks after boot (with the pid, tells a reused pid apart). */
  start: number;
  cmdline: string;
}

/** One line of fake-pi's report: a start that said something of its own. */
export interface ReportEntry {
  fake_pi_report: 1;
  pid: number;
  exit: number;
  cassette: string | null;
  lines: string[];
}

/** A report line that is not an entry: its one line names it (`FILE:N`) and what is wrong. */
export interface BadReportLine {
  bad_line: number;
  lines: [string];
}

export class PiWorld {
  constructor(options: WorldOptions | string);
  /** The native fake-pi binary (a real path). */
  readonly fakePi: string;
  /** The cassette file replayed (or, while recording, written). */
  readonly cassette: string;
  /** The record mode that applies (`none` whenever CI is set). */
  readonly recordMode: RecordMode;
  /** While recording: the LLM script, the real CLI and the agent it is; else null. */
  readonly recording: { script: string; pi: string; agent: Agent } | null;
  /** Re-recordings of the cassette waiting for `pi-harness cassette review`. */
  pending(): string[];
  /** `$PI_HARNESS_HTML` made absolute, or null: where replay pages go. */
  readonly htmlDir: string | null;
  /** The replay page this world wrote last, or null. */
  readonly html: string | null;
  /**
   * Write the replay page (the replay as it happened, what fake-pi said, `leftovers`, `failure`,
   * beside the cassette's own run) into `$PI_HARNESS_HTML`; its path, or null when unset or not written.
   */
  writeHtml(options?: { failure?: string; leftovers?: string[] }): string | null;
  readonly agent: Agent;
  /** Whether close() lets an unused cassette pass. */
  allowUnused: boolean;
  /** The variables set from the cassette's setup (a dummy key, ...). */
  readonly setUp: Record<string, string>;
  /** The test's own variables (`env`). */
  readonly ownEnv: Record<string, string>;
  /** The files written into the agent's home from the cassette's setup. */
  readonly setupFiles: string[];
  /** FAKE_PI_PLAYED: fake-pi's trace of the starts that played. */
  readonly playedFile: string;
  /** What this world set up for the call, a line each (the cassette, the variables, the home and its files, the fields ignored). */
  describe(): string;
  /** Throws UnusedCassetteError when the cassette was never replayed, or a directory of runs only in part. */
  checkPlayed(): void;
  /** The world's temp dir (removed by close()). */
  readonly path: string;
  /** The private PATH directory holding `pi`, `claude`, `codex` or `gemini`. */
  readonly binDir: string;
  /** The `pi` (`claude`, `codex`, `gemini`) link to the native fake-pi (while recording: a one-line sh script running `pi-harness record ... --replay-with fake-pi`). */
  readonly agentPath: string;
  /** The agent dir (PI_CODING_AGENT_DIR; CODEX_HOME, GEMINI_CLI_HOME): the cassette's config in it. */
  readonly agentDir: string;
  /** FAKE_PI_REPORT. */
  readonly reportFile: string;
  /** The unique marker (PI_HARNESS_TEST_MARKER). */
  readonly marker: string;
  readonly grace: number;
  /** The world's variables alone: PATH, FAKE_PI_CASSETTE, FAKE_PI_SPEED, the agent's home, the dummy key, the marker, FAKE_PI_REPORT, ... */
  readonly variables: WorldVariables;
  /** process.env with the world's variables: hand it to the wrapper under test. */
  readonly env: Record<string, string | undefined>;
  /** fake-pi's report so far (a malformed line is named, never thrown). */
  report(): Array<ReportEntry | BadReportLine>;
  /** Every line fake-pi said of its own, in order. */
  mismatches(): string[];
  /** The live processes the test started. */
  alive(): Proc[];
  /** Rejects with LeftoverError naming what is alive `grace` ms from now, stopped and killed first (one that forks and exits at once too). */
  checkNoneLeft(grace?: number): Promise<void>;
  /** The leftover check (then, unless allowUnused, the unused check), then the temp dir removed; a second call does nothing. */
  close(): Promise<void>;
}

/** A test context this helper closes a world with: node:test's `t`, vitest's context. */
export interface TestContextLike {
  name?: string;
  filePath?: string;
  task?: { name?: string; file?: { name?: string; filepath?: string } };
  after?(fn: () => unknown): unknown;
  diagnostic?(message: string): void;
  onTestFinished?(fn: () => unknown): unknown;
  onTestFailed?(fn: () => unknown): unknown;
}

/** piWorld, or piWorld with defaults (`piWorld.configure`). */
export interface PiWorldFunction {
  /** A world, closed when the test of `context` ends (its leftovers, and an unused cassette, fail the test). */
  (context: TestContextLike, options?: WorldOptions | string): PiWorld;
  /** A world you close yourself (`afterEach(() => world.close())` in jest). */
  (options: WorldOptions | string): PiWorld;
  /** The same with `defaults` for every test that uses it (a test's own options win; `env` merged, `ignore` joined). */
  configure(defaults: WorldOptions): PiWorldFunction;
}
export const piWorld: PiWorldFunction;

/** The native binaries; throws UnsupportedPlatformError (one line) where there are none. */
export function binaries(options?: { platform?: string; arch?: string }): { fakePi: string; piHarness: string };
/** The corpus the binary embeds, exported once per process (cassettes/, expected/). */
export function corpus(): string;
/** A cassette path, or a bundled name in any form, as a file path; throws CassetteNotFoundError (with "did you mean"). */
export function resolveCassette(cassette: string): string;
/** The one name of a bundled cassette, from any form (`cassettes/x/y.cassette.jsonl` is `x/y`). */
export function caseName(given: string): string;
/** `linux-x64`, `darwin-arm64`, `linux-x64-musl`, ... */
export function platformName(platform?: string, arch?: string): string;
/** `PID COMMAND LINE (session S, parent P)`. */
export function describe(p: Proc): string;

export class LeftoverError extends Error {
  readonly leftovers: Proc[];
  /** New ones kept starting while they were being killed (a process that forks and exits at once). */
  readonly evasive: boolean;
}
export class CassetteNotFoundError extends Error {}
/** The cassette was never replayed (the test's code never ran the CLI), or a directory of runs only in part. */
export class UnusedCassetteError extends Error {}
export class UnsupportedPlatformError extends Error {}
