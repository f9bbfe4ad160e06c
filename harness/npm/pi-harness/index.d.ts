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

export type Agent = 'pi' | 'claude' | 'codex';
export type RecordMode = (typeof RECORD_MODES)[number];

export interface WorldOptions {
  /** A cassette file, or a name in the bundled corpus (`recorded/text_only.pi87`). */
  cassette: string;
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
  /** The real pi a recording runs (default `$PI_HARNESS_REAL_PI`, else `pi-harness install pi VERSION`). */
  realPi?: string;
  /** The pi version `pi-harness install` fetches when no real pi is named (default `$PI_HARNESS_PI_VERSION`, else 1.5.2). */
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
  /** While recording: the LLM script and the real pi; else null. */
  readonly recording: { script: string; pi: string } | null;
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
  /** The world's temp dir (removed by close()). */
  readonly path: string;
  /** The private PATH directory holding `pi`, `claude` or `codex`. */
  readonly binDir: string;
  /** The `pi` (or `claude`) link to the native fake-pi (while recording: a one-line sh script running `pi-harness record ... --replay-with fake-pi`). */
  readonly agentPath: string;
  /** An empty agent dir (PI_CODING_AGENT_DIR; for Codex also CODEX_HOME). */
  readonly agentDir: string;
  /** FAKE_PI_REPORT. */
  readonly reportFile: string;
  /** The unique marker (PI_HARNESS_TEST_MARKER). */
  readonly marker: string;
  readonly grace: number;
  /** The world's variables alone: PATH, FAKE_PI_CASSETTE, FAKE_PI_SPEED, PI_CODING_AGENT_DIR, the marker, FAKE_PI_REPORT. */
  readonly variables: Record<string, string>;
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
  /** The leftover check, then the temp dir removed; a second call does nothing. */
  close(): Promise<void>;
}

/** A test context this helper closes a world with: node:test's `t`, vitest's context. */
export interface TestContextLike {
  name?: string;
  task?: { name?: string };
  after?(fn: () => unknown): unknown;
  diagnostic?(message: string): void;
  onTestFinished?(fn: () => unknown): unknown;
  onTestFailed?(fn: () => unknown): unknown;
}

/** A world, closed when the test of `context` ends (its leftovers fail the test). */
export function piWorld(context: TestContextLike, options: WorldOptions | string): PiWorld;
/** A world you close yourself (`afterEach(() => world.close())` in jest). */
export function piWorld(options: WorldOptions | string): PiWorld;

/** The native binaries; throws UnsupportedPlatformError (one line) where there are none. */
export function binaries(options?: { platform?: string; arch?: string }): { fakePi: string; piHarness: string };
/** The corpus the binary embeds, exported once per process (cassettes/, expected/). */
export function corpus(): string;
/** A cassette path, or a bundled name, as a file path. */
export function resolveCassette(cassette: string): string;
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
export class UnsupportedPlatformError extends Error {}
