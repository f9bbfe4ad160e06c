// The timeline pages in ONE headless Chromium (Debian's `chromium`, driven by playwright-core;
// no browser is downloaded). harness/cli/tests/it/timeline_browser.rs renders every committed
// cassette and a few hostile ones, writes a manifest and runs:
//
//   node check.mjs MANIFEST.json            check every page of the manifest
//   node check.mjs --time PAGE.html [RUNS]  print how long a page takes to load (median)
//
// For each page, from its DOM: it loads (its inline script ran under its own CSP) with no
// network request and no console error; every record is reachable, drawn as a mark or counted
// in an aggregate whose list, once pressed, holds exactly its records (the lines of all
// adding up to the cassette's records, each once); every process is a bar; every mark is a
// button with a label naming its kind and time, at least 24 px square, in the tab order
// (and, where the manifest asks, really reached with Tab, an aggregate opened with Enter and
// left with Escape); axe-core finds no WCAG 2.x A/AA
// violation; a hostile page shows its text as text and holds no element or handler of its
// own. Screenshots go where the manifest says. One line per problem; exit 1 if any.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const CHROMIUM = process.env.PI_HARNESS_CHROMIUM_BIN || '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const WCAG = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

// One tab for every page: what it sees goes to the page being checked.
let tab = null;
const seen = { url: '', requests: [], problems: [] };
async function open(browser, file, problems) {
  if (!tab) {
    tab = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    tab.on('request', (r) => { if (r.url() !== seen.url) { seen.requests.push(r.url()); } });
    tab.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') { seen.problems.push(`console ${m.type()}: ${m.text()}`); } });
    tab.on('pageerror', (e) => seen.problems.push(`page error: ${e.message}`));
  }
  seen.url = 'file://' + file;
  seen.requests = [];
  seen.problems = problems;
  const t0 = Date.now();
  await tab.goto(seen.url, { waitUntil: 'load' });
  // The page's script runs as it is parsed: drawn by `load`, or never (survey() says so).
  const ms = Date.now() - t0;
  return { page: tab, requests: seen.requests, ms };
}

// Everything that can be read without pressing anything.
function survey() {
  const out = { problems: [], singles: [], aggs: [], bars: 0, marks: 0 };
  const csp = document.querySelector('meta[http-equiv="Content-Security-Policy"]');
  if (!csp || !/default-src 'none'/.test(csp.content)) { out.problems.push('no CSP with default-src \'none\''); }
  if (document.body.dataset.ready !== '1') { out.problems.push('the page did not draw'); }
  if (document.body.dataset.error) { out.problems.push('script error: ' + document.body.dataset.error); }
  const marks = [...document.querySelectorAll('#tl-sections .mk, #tl-sections .ag, #tl-sections .ar, #tl-sections .bar')];
  out.marks = marks.length;
  for (const m of marks) {
    const label = m.getAttribute('aria-label') || '';
    if (!/\d+\.\d ms/.test(label) || label.length < 12) { out.problems.push('a mark without kind and time: ' + JSON.stringify(label.slice(0, 80))); }
    if (m.tagName !== 'BUTTON' || m.disabled || m.tabIndex < 0 || m.closest('[inert],[aria-hidden="true"]')) {
      out.problems.push('a mark out of the tab order: ' + label.slice(0, 80));
    }
    const r = m.getBoundingClientRect();
    if (r.width < 24 || r.height < 24) { out.problems.push(`a mark of ${r.width}x${r.height} px: ${label.slice(0, 60)}`); }
  }
  out.singles = [...document.querySelectorAll('#tl-sections .mk')].map((m) => Number(m.dataset.line));
  out.bars = document.querySelectorAll('#tl-sections .bar').length;
  out.aggs = document.querySelectorAll('#tl-sections .ag').length;
  return out;
}

// Press every aggregate and read its list.
function expand() {
  const out = { problems: [], lines: [], bulk: 0, counted: 0 };
  for (const a of document.querySelectorAll('#tl-sections .ag')) {
    a.click();
    const count = Number(a.dataset.count);
    out.counted += count;
    const members = [...document.querySelectorAll('#tl-detail-body .members .mb')].map((b) => Number(b.dataset.line));
    const bulk = [...document.querySelectorAll('#tl-detail-body .members .bulk')].reduce((n, b) => n + Number(b.dataset.count), 0);
    if (members.length + bulk !== count) { out.problems.push(`an aggregate of ${count} lists ${members.length} + ${bulk} counted`); }
    if (a.getAttribute('aria-expanded') !== 'true') { out.problems.push('an aggregate pressed is not marked expanded'); }
    out.lines.push(...members);
    out.bulk += bulk;
  }
  return out;
}

// Press every mark and member; the text of every record shown.
function texts() {
  const seen = [];
  const read = () => { const pre = document.querySelector('#tl-detail-body pre'); if (pre) { seen.push(pre.textContent); } };
  for (const m of document.querySelectorAll('#tl-sections .mk')) { m.click(); read(); }
  for (const a of document.querySelectorAll('#tl-sections .ag')) {
    a.click();
    const n = document.querySelectorAll('#tl-detail-body .members .mb').length;
    for (let i = 0; i < n; i++) {
      a.click();
      document.querySelectorAll('#tl-detail-body .members .mb')[i].click();
      read();
    }
  }
  return { seen, sub: document.getElementById('tl-sub').textContent, title: document.getElementById('tl-title').textContent };
}

function injected() {
  const found = [];
  const foreign = document.querySelectorAll('img, iframe, object, embed, a, form, svg, video, audio, link, base, frame, input, textarea');
  if (foreign.length) { found.push(`${foreign.length} foreign elements (${[...foreign].map((e) => e.tagName).join(',')})`); }
  const sections = document.querySelectorAll('script[type="application/json"]').length;
  const code = [...document.scripts].filter((s) => s.type !== 'application/json').length;
  if (code !== 1) { found.push(`${code} executable scripts`); }
  if (sections < 2) { found.push('no data'); }
  for (const e of document.querySelectorAll('*')) {
    for (const a of e.attributes) {
      if (a.name.startsWith('on') || /^\s*javascript:/i.test(a.value)) { found.push(`${e.tagName} ${a.name}`); }
    }
  }
  if (window.__pwned !== undefined) { found.push('injected code ran: ' + window.__pwned); }
  return found;
}

async function tabWalk(page, problems) {
  const total = await page.evaluate(() => {
    const marks = [...document.querySelectorAll('#tl-sections .mk, #tl-sections .ag, #tl-sections .ar, #tl-sections .bar')];
    marks.forEach((m, i) => { m.dataset.k = i; });
    document.activeElement && document.activeElement.blur();
    return marks.length;
  });
  const reached = new Set();
  for (let i = 0; i < total + 40 && reached.size < total; i++) {
    await page.keyboard.press('Tab');
    const k = await page.evaluate(() => document.activeElement && document.activeElement.dataset.k);
    if (k !== undefined && k !== null) { reached.add(k); }
  }
  if (reached.size !== total) { problems.push(`Tab reached ${reached.size} of ${total} marks`); }
  // Enter on an aggregate lists its records and goes there; Escape comes back.
  const hasAgg = await page.evaluate(() => { const a = document.querySelector('#tl-sections .ag'); if (a) { a.focus(); } return Boolean(a); });
  if (hasAgg) {
    await page.keyboard.press('Enter');
    const inList = await page.evaluate(() => document.activeElement.classList.contains('mb'));
    await page.keyboard.press('Escape');
    const back = await page.evaluate(() => document.activeElement.classList.contains('ag'));
    if (!inList || !back) { problems.push(`an aggregate by keyboard: list focused ${inList}, back with Escape ${back}`); }
  }
  return reached.size;
}

async function checkPage(browser, p) {
  const problems = [];
  const { page, requests, ms } = await open(browser, p.html, problems);
  // One round trip for what is read and pressed on every page.
  const { s, e } = await page.evaluate(`({ s: (${survey})(), e: (${expand})() })`);
  problems.push(...s.problems, ...e.problems);
  if (e.counted !== e.lines.length + e.bulk) { problems.push('aggregate counts and lists differ'); }
  if (p.tab) { await tabWalk(page, problems); }
  let axeViolations = null;
  if (p.axe) {
    await page.evaluate(AXE);
    const run = () => page.evaluate((tags) => window.axe.run(document, { runOnly: { type: 'tag', values: tags } }), WCAG);
    const r = await run();
    // Again with a list open: the detail panel's buttons and texts.
    await page.evaluate(() => { const a = document.querySelector('#tl-sections .ag') || document.querySelector('#tl-sections .mk'); if (a) { a.click(); } });
    const r2 = await run();
    const all = r.violations.concat(r2.violations);
    axeViolations = all.length;
    for (const v of all) { problems.push(`axe ${v.id} (${v.impact}): ${v.help}: ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join('; ')}`); }
  }
  const lines = s.singles.concat(e.lines);
  const reachable = lines.length + e.bulk;
  if (reachable !== p.records) { problems.push(`${reachable} records reachable (${s.singles.length} drawn, ${e.lines.length} listed, ${e.bulk} counted), the cassette has ${p.records}`); }
  if (e.bulk === 0 && p.lines !== false) {
    const uniq = new Set(lines);
    const expected = Array.from({ length: p.records }, (_, i) => i + 2);
    const missing = expected.filter((l) => !uniq.has(l));
    if (uniq.size !== lines.length || missing.length) { problems.push(`record lines: ${lines.length - uniq.size} twice, missing ${missing.slice(0, 5).join(',')}`); }
  }
  if (s.bars !== p.procs) { problems.push(`${s.bars} process bars, the cassette has ${p.procs} processes`); }
  if (p.hostile) {
    problems.push(...(await page.evaluate(injected)));
    const t = await page.evaluate(texts);
    for (const want of p.hostile) {
      if (!t.seen.some((x) => x.includes(want)) && !t.sub.includes(want)) { problems.push('hostile text not shown as text: ' + JSON.stringify(want)); }
    }
    problems.push(...(await page.evaluate(injected)));
  }
  if (p.screenshot) {
    await page.evaluate(() => { window.scrollTo(0, 0); });
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('body[data-ready="1"]');
    if (p.click) { await page.click(p.click); }
    await page.screenshot({ path: p.screenshot, fullPage: false });
  }
  if (requests.length) { problems.push(`network requests: ${requests.slice(0, 3).join(', ')}`); }
  return { problems, reachable, bars: s.bars, marks: s.marks, ms, axe: axeViolations };
}

async function main() {
  const argv = process.argv.slice(2);
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  let failed = false;
  try {
    if (argv[0] === '--time') {
      const runs = Number(argv[2] || 5);
      const times = [];
      for (let i = 0; i < runs; i++) {
        const problems = [];
        const { page, ms, requests } = await open(browser, argv[1], problems);
        const ready = await page.evaluate(() => Number(document.body.dataset.readyMs));
        times.push([ms, ready]);
        if (problems.length || requests.length) { console.log(problems.concat(requests).join('\n')); failed = true; }
      }
      const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      console.log(`load: median ${median(times.map((t) => t[0]))} ms from navigation to drawn (runs: ${times.map((t) => t[0]).join(', ')} ms); ` +
        `the page's own script done at ${median(times.map((t) => t[1])).toFixed(0)} ms after navigation start`);
    } else {
      const manifest = JSON.parse(readFileSync(argv[0], 'utf8'));
      let records = 0; let bars = 0; let marks = 0; let axed = 0; let slowest = [0, ''];
      for (const p of manifest.pages) {
        const r = await checkPage(browser, p);
        for (const problem of r.problems) { console.log(`${p.name}: ${problem}`); failed = true; }
        records += r.reachable; bars += r.bars; marks += r.marks;
        if (r.axe !== null) { axed += 1; }
        if (r.ms > slowest[0]) { slowest = [r.ms, p.name]; }
      }
      console.log(`timeline pages: ${manifest.pages.length} checked in one Chromium (${(await browser.version())}), ` +
        `${records} records reachable, ${bars} process bars, ${marks} marks labelled and focusable, axe on ${axed} pages; ` +
        `slowest load ${slowest[0]} ms (${slowest[1]})`);
    }
  } finally {
    await browser.close();
  }
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.log('error: ' + (e && e.stack || e)); process.exit(2); });
