// Drives code-server (a real VS Code) with headless Chromium through playwright-core:
// the Citeline extension and its daemon on a copy of the sample documents.
//
//   node run_e2e.mjs --url http://127.0.0.1:PORT --workspace /abs/docs --out /abs/test-results
//
// `playwright-core` must resolve (scripts/e2e.sh sets NODE_PATH to the e2e prefix).
// Every wait is on state (status bar text, panel contents, editor state), bounded.
// Exits non-zero on the first failed check, after a failure.png screenshot.
//
// The palette-retry and launch details follow the vscode-e2e recipe (MIT) Citeline's
// developers use.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { chromium } = require('playwright-core');

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : dflt;
};
const url = opt('url');
const workspace = opt('workspace');
const outDir = opt('out', process.cwd());
const question = opt('question', 'Where does Citeline store its index?');
if (!url || !workspace) {
  console.error('usage: node run_e2e.mjs --url URL --workspace DIR --out DIR [--question Q]');
  process.exit(2);
}
const u = new URL(url);
if (u.hostname !== '127.0.0.1' && u.hostname !== 'localhost') throw new Error('loopback only');
fs.mkdirSync(outDir, { recursive: true });

const READY_TIMEOUT = 600_000; // model load + first indexing of the samples
const ANSWER_TIMEOUT = 300_000;
const t0 = Date.now();
const secs = () => ((Date.now() - t0) / 1000).toFixed(1);
const mark = (msg) => console.log(`[e2e +${secs()}s] ${msg}`);
const timings = {};
const check = (cond, msg) => {
  if (!cond) throw new Error(msg);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function runCommand(page, title, timeoutMs = 60_000) {
  // Right after the workbench shows, a freshly installed extension's commands may
  // not be registered yet ("No matching commands"): retry, bounded.
  const end = Date.now() + timeoutMs;
  // The palette also closes if focus moves just as it opens (an editor that a
  // previous step opened taking focus late): that attempt is retried too.
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.press('F1');
    const input = page.locator('.quick-input-widget input.input');
    const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
    try {
      await input.waitFor({ state: 'visible', timeout: 15_000 });
      await input.fill(`>${title}`, { timeout: 5_000 });
      await row.waitFor({ state: 'visible', timeout: 3000 });
      await page.keyboard.press('Enter');
      return;
    } catch {
      await page.keyboard.press('Escape');
      if (Date.now() > end) throw new Error(`command "${title}" not in the palette after ${timeoutMs} ms`);
      await page.waitForTimeout(1000);
    }
  }
}

async function askQuestion(page, text) {
  // The ask box closes if focus moves away just as it opens (an editor that a
  // previous step opened taking focus late): ask again, bounded.
  for (let attempt = 1; ; attempt++) {
    await runCommand(page, 'Citeline: Ask a Question');
    try {
      await page.locator('.quick-input-widget', { hasText: 'Ask your documents' }).waitFor({ state: 'visible', timeout: 15_000 });
      await page.locator('.quick-input-widget input.input').fill(text, { timeout: 5_000 });
      await page.keyboard.press('Enter');
      return;
    } catch (e) {
      if (attempt >= 3) throw e;
      mark(`the ask box closed before the question was typed (attempt ${attempt}); asking again`);
      await page.keyboard.press('Escape');
      await page.waitForTimeout(1000);
    }
  }
}

function citelineStatus(page) {
  return page.locator('.statusbar-item', { hasText: 'Citeline:' }).first();
}

/** The frame of the answer panel's webview (the one holding #history). */
async function answerFrame(page, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    for (const frame of page.frames()) {
      try {
        if ((await frame.locator('#history').count()) > 0) return frame;
      } catch {
        // frame detached while looking
      }
    }
    await sleep(250);
  }
  throw new Error('answer panel (webview with #history) did not appear');
}

/** Text as a reader compares it: Markdown's inline-code backticks dropped (the panel shows code spans as code), whitespace collapsed. */
const flatten = (text) => text.replace(/`/g, '').replace(/\s+/g, ' ').trim();

/** Lines [start, end] (1-based, inclusive) of a file. */
function fileLines(file, start, end) {
  return fs.readFileSync(file, 'utf8').split(/\r?\n/).slice(start - 1, end).join('\n');
}

/** Sentences of a unit of answer text (a quoted unit may hold one or several). */
function sentences(text) {
  return flatten(text)
    .split(/(?<=[.!?。！？])\s+/)
    .map((s) => s.trim())
    .filter((s) => s.length >= 12);
}

/** Expected editor state after opening lines [start, end] (1-based) of a file. */
function expectedSelection(file, start, end) {
  const lines = fs.readFileSync(file, 'utf8').split(/\r?\n/);
  const last = Math.min(end, lines.length);
  const text = lines.slice(start - 1, last).join('\n');
  return { line: last, selected: text.length, firstLine: lines[start - 1] };
}

/** The grade labels of wire agreement A, which the panel shows verbatim. */
const GRADE_LABELS = {
  answer: 'Answer',
  closest: 'Closest passages — they may not answer the question',
  refused: 'Not found in the documents',
};

/** The grade an entry shows: its data-grade and the label text, or undefined (a server without grades). */
async function shownGrade(entry) {
  const grade = await entry.getAttribute('data-grade');
  if (!grade) return undefined;
  const label = entry.locator('.grade .grade-text, .refusal-title').first();
  const text = (await label.innerText()).replace(/\s+/g, ' ').trim().replace(/\.$/, '');
  return { grade, text };
}

/** The first frame holding `selector` (webviews are nested frames). */
async function frameWith(page, selector, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    for (const frame of page.frames()) {
      try {
        if ((await frame.locator(selector).count()) > 0) return frame;
      } catch {
        // frame detached while looking
      }
    }
    await sleep(250);
  }
  throw new Error(`no webview with ${selector} appeared`);
}

/** Asks a question and waits for its entry to finish; returns the entry. */
async function askAndWait(page, text) {
  await askQuestion(page, text);
  const frame = await answerFrame(page, 60_000);
  const entry = frame.locator('#history .entry', { hasText: text }).first();
  await entry.waitFor({ state: 'attached', timeout: 30_000 });
  const end = Date.now() + ANSWER_TIMEOUT;
  while (((await entry.getAttribute('class')) ?? '').includes('state-streaming')) {
    if (Date.now() > end) throw new Error(`no answer to "${text}"`);
    await sleep(200);
  }
  const cls = (await entry.getAttribute('class')) ?? '';
  check(cls.includes('state-done'), `"${text}" did not finish: ${cls}`);
  mark(`asked "${text}": ${cls}`);
  return entry;
}

/** A row of the Citeline sidebar's trees whose accessible label starts with `prefix`. */
function sidebarRow(page, prefix) {
  return page.locator(`.part.sidebar .monaco-list-row[aria-label^="${prefix.replace(/"/g, '\\"')}"]`).first();
}

/** Documents Citeline indexes in a folder (what the sample set holds), the broken one left out. */
function countDocuments(dir) {
  let n = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith('.')) continue;
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) n += countDocuments(p);
    else if (/\.(md|markdown|html?|pdf|txt)$/i.test(entry.name) && entry.name !== 'broken.pdf') n++;
  }
  return n;
}

/** The workbench clipboard (the browser's, which code-server's clipboard API writes). */
async function readClipboard(page) {
  return page.evaluate(() => navigator.clipboard.readText());
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'citeline-e2e-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1500, height: 950 },
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: u.origin });
let failed = false;
const page = context.pages()[0] || (await context.newPage());
page.on('pageerror', (e) => console.log('[pageerror]', String(e).slice(0, 300)));
try {
  // ---- workbench, and the daemon ready -------------------------------------------
  await page.goto(`${u.origin}/?folder=${encodeURIComponent(workspace)}`, { waitUntil: 'domcontentloaded', timeout: 60_000 });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 90_000 });
  mark('workbench visible');

  // ---- the sidebar: an opened folder without citeline.toml is not served; index it from there ----
  // (Opening the view also activates the extension where a window without a marked folder does not.)
  await runCommand(page, 'Citeline: Focus on Folders View', 120_000);
  const wsName = path.basename(workspace);
  const unserved = sidebarRow(page, `${wsName} not served`);
  await unserved.waitFor({ state: 'visible', timeout: 180_000 }); // no model is loaded for it
  mark(`sidebar: "${await unserved.getAttribute('aria-label')}"`);
  const status = citelineStatus(page);
  await status.waitFor({ state: 'visible', timeout: 120_000 });
  mark(`status bar: "${(await status.innerText()).trim()}"`);
  check(!/Citeline: ready/.test(await status.innerText()), `status bar says ready for a folder that is not served: ${await status.innerText()}`);
  await page.screenshot({ path: path.join(outDir, 'sidebar-unserved.png') });
  await unserved.hover();
  await unserved.locator('.action-label[aria-label="Index This Folder"]').click();
  mark('clicked "Index This Folder" in the sidebar');
  const tomlEnd = Date.now() + 60_000;
  while (!fs.existsSync(path.join(workspace, 'citeline.toml')) && Date.now() < tomlEnd) await sleep(200);
  check(fs.existsSync(path.join(workspace, 'citeline.toml')), 'Index This Folder wrote no citeline.toml');

  // ---- indexing shows in the sidebar with Pause and Cancel: pause it there -----------------
  const indexingRow = sidebarRow(page, 'Indexing');
  await indexingRow.waitFor({ state: 'visible', timeout: 120_000 });
  mark(`sidebar: "${await indexingRow.getAttribute('aria-label')}"`);
  await indexingRow.hover();
  await page.screenshot({ path: path.join(outDir, 'sidebar-indexing.png') });
  await indexingRow.locator('.action-label[aria-label="Pause Indexing"]').click();
  const pausedAt = Date.now();
  mark('clicked "Pause Indexing" in the sidebar');
  // "pausing" while the file being committed finishes, then "paused" with what waits.
  const pausedRow = sidebarRow(page, `${wsName} paused`);
  await pausedRow.waitFor({ state: 'visible', timeout: 120_000 });
  const pausedLabel = (await pausedRow.getAttribute('aria-label')) ?? '';
  const pausedFiles = Number(/(\d+) files?/.exec(pausedLabel)?.[1] ?? NaN);
  mark(`paused ${((Date.now() - pausedAt) / 1000).toFixed(1)}s after the click: "${pausedLabel}"`);
  check(/\d+ files? waiting/.test(pausedLabel), `the paused row does not say what waits: ${pausedLabel}`);
  const pausedStatus = (await status.innerText()).trim();
  check(/Citeline: paused/.test(pausedStatus), `the status bar does not say paused: ${pausedStatus}`);
  await indexingRow.hover();
  await page.screenshot({ path: path.join(outDir, 'sidebar-paused.png') });
  // Nothing is committed while paused: the count stays put (watched for a few seconds).
  const holdEnd = Date.now() + 4000;
  while (Date.now() < holdEnd) {
    const label = (await sidebarRow(page, wsName).getAttribute('aria-label')) ?? '';
    check(label.startsWith(`${wsName} paused`), `the folder left "paused" by itself: ${label}`);
    check(Number(/(\d+) files?/.exec(label)?.[1] ?? NaN) === pausedFiles, `files were indexed while paused: ${label} (${pausedFiles} at the pause)`);
    await sleep(250);
  }
  mark(`still ${pausedFiles} files after 4 s paused`);

  // ---- resume there: indexing goes on; then cancel it there ---------------------------
  await indexingRow.hover();
  await indexingRow.locator('.action-label[aria-label="Resume Indexing"]').click();
  mark('clicked "Resume Indexing" in the sidebar');
  const folderRow = sidebarRow(page, wsName);
  const resumeEnd = Date.now() + 60_000;
  for (;;) {
    const label = (await folderRow.getAttribute('aria-label')) ?? '';
    if (!label.startsWith(`${wsName} paus`)) {
      mark(`resumed: "${label}"`);
      break;
    }
    check(Date.now() < resumeEnd, `still paused 60 s after Resume: ${label}`);
    await sleep(100);
  }
  await indexingRow.hover();
  await indexingRow.locator('.action-label[aria-label="Cancel Indexing"]').click();
  const cancelledAt = Date.now();
  mark('clicked "Cancel Indexing" in the sidebar');
  await indexingRow.waitFor({ state: 'detached', timeout: 120_000 });
  mark(`indexing ended ${((Date.now() - cancelledAt) / 1000).toFixed(1)}s after the cancel`);
  const docs = countDocuments(workspace);
  await folderRow.waitFor({ state: 'visible', timeout: 30_000 });
  let afterCancel = '';
  const settleEnd = Date.now() + 30_000;
  while (Date.now() < settleEnd) {
    afterCancel = (await folderRow.getAttribute('aria-label')) ?? '';
    if (!/^\S+ indexing/.test(afterCancel) && /\d+ files?/.test(afterCancel)) break;
    await sleep(250);
  }
  const cancelledFiles = Number(/(\d+) files?/.exec(afterCancel)?.[1] ?? NaN);
  mark(`after the cancel: "${afterCancel}" (${docs} documents in the folder)`);
  check(cancelledFiles < docs, `the cancelled indexing still indexed every document (${cancelledFiles} of ${docs}): not cancelled`);
  await page.screenshot({ path: path.join(outDir, 'sidebar-cancelled.png') });
  // The rest is indexed by the next reindex.
  await runCommand(page, 'Citeline: Reindex');

  let lastStatus = '';
  const readyEnd = Date.now() + READY_TIMEOUT;
  for (;;) {
    const text = (await status.innerText()).trim().replace(/\s+/g, ' ');
    if (text !== lastStatus) {
      mark(`status bar: "${text}"`);
      lastStatus = text;
    }
    if (/Citeline: ready/.test(text) && Number(/(\d+) files?/.exec(text)?.[1] ?? 0) > cancelledFiles) break;
    if (/Citeline: (error|server failed|stopped)/.test(text)) throw new Error(`daemon state: ${text}`);
    if (Date.now() > readyEnd) throw new Error(`status bar not "ready" after ${READY_TIMEOUT / 1000}s: ${text}`);
    await sleep(250);
  }
  timings.ready = secs();
  const readyText = lastStatus;
  check(/\d+ files? · \d+ chunks?/.test(readyText), `ready status lacks file/chunk counts: ${readyText}`);
  const readyFiles = Number(/(\d+) files?/.exec(readyText)?.[1]);
  check(readyFiles > cancelledFiles, `Reindex did not index the rest after the cancel (${readyFiles} files, ${cancelledFiles} before)`);
  const readyRow = sidebarRow(page, `${wsName} ready`);
  await readyRow.waitFor({ state: 'visible', timeout: 30_000 });
  mark(`sidebar: "${await readyRow.getAttribute('aria-label')}"`);

  // ---- diagnostics: the broken document's problem is in the Problems panel ----------------
  await page.keyboard.press('Control+Shift+M');
  const problem = page.locator('.markers-panel .monaco-list-row', { hasText: 'broken.pdf' }).first();
  await problem.waitFor({ state: 'visible', timeout: 60_000 });
  const detail = page.locator('.markers-panel .monaco-list-row', { hasText: 'citeline' }).first();
  await detail.waitFor({ state: 'visible', timeout: 30_000 });
  mark(`Problems panel: ${(await problem.innerText()).replace(/\s+/g, ' ').trim()} / ${(await detail.innerText()).replace(/\s+/g, ' ').trim()}`);
  await page.screenshot({ path: path.join(outDir, 'problems.png') });
  await page.keyboard.press('Control+J'); // hide the panel again

  // ---- ask -----------------------------------------------------------------------
  await askQuestion(page, question);
  const askedAt = Date.now();
  mark(`asked: "${question}"`);
  const frame = await answerFrame(page, 60_000);
  const entry = frame.locator('#history .entry').first();
  await entry.waitFor({ state: 'attached', timeout: 30_000 });
  check((await entry.locator('.question').innerText()).trim() === question, 'panel does not show the question');

  // Watch the panel until the answer is done, noting the partial texts seen on the way.
  const partials = new Set();
  let firstTextAt;
  const answerEnd = Date.now() + ANSWER_TIMEOUT;
  for (;;) {
    const cls = (await entry.getAttribute('class')) ?? '';
    if (!cls.includes('state-streaming')) break;
    const answerDiv = entry.locator('.answer');
    if ((await answerDiv.count()) > 0) {
      const text = await answerDiv.innerText();
      if (text) {
        firstTextAt ??= Date.now();
        partials.add(text.length);
      }
    }
    if (Date.now() > answerEnd) throw new Error(`no answer after ${ANSWER_TIMEOUT / 1000}s`);
    await sleep(100);
  }
  timings.answer = ((Date.now() - askedAt) / 1000).toFixed(1);
  const cls = (await entry.getAttribute('class')) ?? '';
  const answerText = (await entry.locator('.answer').innerText().catch(() => '')).trim();
  mark(`answer (${timings.answer}s, class "${cls}"): ${JSON.stringify(answerText.slice(0, 400))}`);
  mark(`streaming: ${partials.size} partial text state(s) seen before the final answer` +
    (firstTextAt ? `, first text ${((firstTextAt - askedAt) / 1000).toFixed(1)}s after asking` : ''));
  if (!cls.includes('state-done')) {
    const why = (await entry.locator('.error, .degraded').count()) ? await entry.locator('.error, .degraded').first().innerText() : '';
    throw new Error(`answer did not finish: ${cls} ${why}`);
  }
  check(!cls.includes('refused'), `the daemon refused: ${answerText}`);

  // How the answer was made: the label over it.
  const label = entry.locator('.mode');
  check((await label.count()) === 1, 'no label saying how the answer was made');
  const labelText = (await label.innerText()).replace(/\s+/g, ' ').trim();
  mark(`label: "${labelText}"`);
  const extractive = /^Quoted from your documents/.test(labelText);
  check(extractive || /^Written by .+, checked against sources/.test(labelText), `unexpected label: ${labelText}`);
  // An extractive answer arrives at once (one delta, then the result); a written one streams.
  check(extractive || partials.size >= 1, 'the written answer did not stream into the panel (no partial text before the result)');

  const citeLinks = entry.locator('ol.citations a.cite');
  const nCitations = await citeLinks.count();
  check(nCitations >= 1, 'no citations listed under the answer');
  const citationTexts = await citeLinks.allInnerTexts();
  mark(`citations: ${citationTexts.map((t) => t.replace(/\s+/g, ' ').trim()).join(' | ')}`);
  const markers = entry.locator('.answer a.marker');
  mark(`[n] markers linked in the text: ${await markers.count()}`);

  // The answer quotes the passages its markers link to: for each linked [n], the text
  // since the previous marker is the unit it cites. At least one of its sentences must
  // be in the cited lines, read from disk, and the marker must link to that citation.
  const units = await entry.locator('.answer').evaluate((root) => {
    const out = [];
    let text = '';
    const visit = (node) => {
      for (const child of node.childNodes) {
        if (child.nodeType === Node.TEXT_NODE) {
          text += child.nodeValue;
        } else if (child.nodeType === Node.ELEMENT_NODE && child.matches('a.marker')) {
          out.push({ text, marker: child.textContent, index: child.dataset.index, path: child.dataset.path, lines: child.dataset.lines });
          text = '';
        } else if (child.nodeType === Node.ELEMENT_NODE) {
          if (child.matches('pre, tr')) text += '\n';
          visit(child);
        }
      }
    };
    visit(root);
    return out;
  });
  check(units.length >= 1, 'no [n] marker linked to a citation in the answer text');
  let quoted;
  for (const u of units) {
    if (!u.lines || !u.path) continue;
    const [from, to] = u.lines.split('-').map(Number);
    const cited = flatten(fileLines(path.join(workspace, ...u.path.split('/')), from, to));
    const found = sentences(u.text).find((sentence) => cited.includes(sentence));
    if (found) {
      quoted = { ...u, sentence: found };
      break;
    }
  }
  check(quoted, `no sentence of the answer is in the lines its marker cites: ${JSON.stringify(units.map((u) => [u.marker, u.path, u.lines, u.text.slice(0, 120)]))}`);
  mark(`quoted: "${quoted.sentence}" ${quoted.marker} -> ${quoted.path} lines ${quoted.lines}`);
  // The marker links to that citation in the sources list.
  const listed = citeLinks.nth(Number(quoted.index));
  check(
    (await listed.getAttribute('data-path')) === quoted.path && (await listed.getAttribute('data-lines')) === quoted.lines,
    `marker ${quoted.marker} does not link to source #${quoted.index} (${await listed.getAttribute('data-path')} ${await listed.getAttribute('data-lines')})`,
  );
  check((await listed.innerText()).includes(quoted.marker), `source #${quoted.index} is not numbered ${quoted.marker}`);
  mark(`code blocks shown as code: ${await entry.locator('.answer pre.code').count()}, tables: ${await entry.locator('.answer table').count()}`);
  // The grade (wire agreement A): the server's label, verbatim.
  const grade = await shownGrade(entry);
  check(grade, 'the answer shows no grade (data-grade and its label): the daemon must send "grade" and "grade_label"');
  check(grade.text === GRADE_LABELS[grade.grade], `grade ${grade.grade} is labelled "${grade.text}", not "${GRADE_LABELS[grade.grade]}"`);
  mark(`grade: ${grade.grade} ("${grade.text}")`);
  await page.screenshot({ path: path.join(outDir, 'answer.png') });
  mark(`screenshot ${path.join(outDir, 'answer.png')}`);

  // ---- copy the answer: the panel's button, then the command -----------------------
  await page.evaluate(() => navigator.clipboard.writeText(''));
  await entry.locator('button[data-action="copy"]').click();
  let copied = '';
  const copyEnd = Date.now() + 15_000;
  while (!copied && Date.now() < copyEnd) {
    copied = await readClipboard(page);
    if (!copied) await sleep(200);
  }
  check(copied.startsWith(`## ${question}\n`), `clipboard does not start with the question: ${JSON.stringify(copied.slice(0, 200))}`);
  check(flatten(copied).includes(flatten(quoted.sentence)), `clipboard lacks the quoted sentence "${quoted.sentence}"`);
  check(copied.includes(quoted.marker), `clipboard lacks the marker ${quoted.marker}`);
  for (let i = 0; i < nCitations; i++) {
    const c = citeLinks.nth(i);
    const p = await c.getAttribute('data-path');
    const lines = await c.getAttribute('data-lines');
    const pg = await c.getAttribute('data-page');
    const n = /\[(\d+)\]/.exec(await c.innerText())?.[1];
    const [a, b] = (lines ?? '').split('-');
    const place = pg ? `${p}, page ${pg}` : a === b ? `${p}:${a}` : `${p}:${a}-${b}`;
    const anchor = pg ? `#page=${pg}` : a === b ? `#L${a}` : `#L${a}-L${b}`;
    const row = copied.split('\n').find((l) => l.startsWith(`- [${n}] [${place}](file://`));
    check(row && row.includes(`${anchor})`), `clipboard lacks source [${n}] as "${place}" linked to ${anchor}: ${JSON.stringify(copied)}`);
  }
  fs.writeFileSync(path.join(outDir, 'copied-answer.md'), copied);
  mark(`Copy answer button: ${copied.split('\n').length} lines of Markdown on the clipboard (copied-answer.md)`);
  await page.evaluate(() => navigator.clipboard.writeText(''));
  await runCommand(page, 'Citeline: Copy Answer');
  let copiedByCommand = '';
  const cmdEnd = Date.now() + 15_000;
  while (!copiedByCommand && Date.now() < cmdEnd) {
    copiedByCommand = await readClipboard(page);
    if (!copiedByCommand) await sleep(200);
  }
  check(copiedByCommand === copied, `"Citeline: Copy Answer" copied something else: ${JSON.stringify(copiedByCommand.slice(0, 200))}`);
  mark('"Citeline: Copy Answer" put the same Markdown on the clipboard');

  // ---- jump to a (text) citation ---------------------------------------------------
  // A marker in the text if it points at a text file, else the first text citation listed.
  const candidates = [];
  for (let i = 0; i < (await markers.count()); i++) candidates.push(markers.nth(i));
  for (let i = 0; i < nCitations; i++) candidates.push(citeLinks.nth(i));
  let link;
  for (const c of candidates) {
    const lines = await c.getAttribute('data-lines');
    if (lines) {
      link = c;
      break;
    }
  }
  check(link, 'no citation with a line range (all PDF?)');
  const relPath = await link.getAttribute('data-path');
  const [start, end] = (await link.getAttribute('data-lines')).split('-').map(Number);
  mark(`clicking ${(await link.innerText()).trim()} -> ${relPath} lines ${start}-${end}`);
  await link.click();
  const base = path.posix.basename(relPath);
  const activeTab = page.locator('.tabs-container .tab.active', { hasText: base });
  await activeTab.waitFor({ state: 'visible', timeout: 30_000 });
  const want = expectedSelection(path.join(workspace, ...relPath.split('/')), start, end);
  const selStatus = page.locator('[id="status.editor.selection"]');
  const wantText = new RegExp(`Ln ${want.line}, Col \\d+ \\(${want.selected} selected\\)`);
  let selText = '';
  const selEnd = Date.now() + 15_000;
  while (Date.now() < selEnd) {
    selText = (await selStatus.innerText().catch(() => '')).trim();
    if (wantText.test(selText)) break;
    await sleep(200);
  }
  mark(`editor: tab "${base}", status "${selText}"`);
  check(wantText.test(selText), `expected "Ln ${want.line}, Col N (${want.selected} selected)" in the status bar, got "${selText}"`);
  const firstWords = want.firstLine.trim().slice(0, 30);
  if (firstWords) {
    const visible = await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().innerText();
    check(visible.replace(/\s+/g, ' ').includes(firstWords.replace(/\s+/g, ' ')), `cited line ${start} not revealed ("${firstWords}")`);
  }
  await page.screenshot({ path: path.join(outDir, 'citation.png') });
  mark('cited file shown with the cited lines selected and revealed');

  // ---- hover a selection ----------------------------------------------------------
  const editor = page.locator('.editor-group-container.active .monaco-editor').first();
  const selected = editor.locator('.view-overlays .selected-text').first();
  await selected.waitFor({ state: 'visible', timeout: 10_000 });
  const box = await selected.boundingBox();
  check(box, 'selection not on screen');
  let hoverText = '';
  const hover = page.locator('.monaco-hover').filter({ has: page.locator('a') }).filter({ hasText: /\.(md|html|pdf|txt)(:\d+|, page \d+)/ });
  for (let attempt = 1; attempt <= 4 && !hoverText; attempt++) {
    const x = box.x + Math.min(box.width / 2, 60) + attempt * 4;
    await page.mouse.move(x, box.y + box.height / 2);
    await page.mouse.move(x + 2, box.y + box.height / 2);
    try {
      await hover.first().waitFor({ state: 'visible', timeout: 20_000 });
      hoverText = (await hover.first().innerText()).trim();
    } catch {
      const shown = await page.locator('.monaco-hover').allInnerTexts().catch(() => []);
      mark(`no passages hover yet (attempt ${attempt}); hovers shown: ${JSON.stringify(shown.map((t) => t.slice(0, 80)))}`);
      await page.screenshot({ path: path.join(outDir, `hover-attempt-${attempt}.png`) });
      await page.mouse.move(5, 5);
      await sleep(500);
    }
  }
  check(hoverText, 'hovering the selection showed no passages');
  const hoverLinks = await hover.first().locator('a').allInnerTexts();
  mark(`hover: ${hoverLinks.length} link(s): ${hoverLinks.slice(0, 5).join(', ')}`);
  await page.screenshot({ path: path.join(outDir, 'hover.png') });
  // Move away to close the hover (Escape would also clear the selection).
  await page.mouse.move(5, 5);

  // ---- Search Selection -----------------------------------------------------------
  await runCommand(page, 'Citeline: Search Selection');
  const rows = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
  await page.locator('.quick-input-widget', { hasText: 'Citeline: passages for' }).waitFor({ state: 'visible', timeout: 15_000 });
  await rows.first().waitFor({ state: 'visible', timeout: 60_000 });
  const firstRow = (await rows.first().innerText()).replace(/\s+/g, ' ').trim();
  mark(`search selection: ${await rows.count()} result(s); first: ${firstRow.slice(0, 120)}`);
  const rowFile = /^(\S+?\.(?:md|html|pdf|txt))/.exec(firstRow)?.[1];
  await page.keyboard.press('Enter');
  if (rowFile) {
    await page.locator('.tabs-container .tab.active', { hasText: path.posix.basename(rowFile) }).waitFor({ state: 'visible', timeout: 30_000 });
    mark(`opened ${rowFile}`);
  }

  // ---- a second question: the history keeps both -------------------------------------
  const second = opt('second-question', 'What is the boiling point of tungsten on Mars?');
  await askQuestion(page, second);
  const frame2 = await answerFrame(page, 30_000);
  const newest = frame2.locator('#history .entry').first();
  await frame2.locator('#history .entry', { hasText: second }).first().waitFor({ state: 'attached', timeout: 30_000 });
  const secondEnd = Date.now() + ANSWER_TIMEOUT;
  while (((await newest.getAttribute('class')) ?? '').includes('state-streaming')) {
    if (Date.now() > secondEnd) throw new Error('no answer to the second question');
    await sleep(200);
  }
  const entries = frame2.locator('#history .entry');
  check((await entries.count()) === 2, `history should hold 2 questions, holds ${await entries.count()}`);
  check((await entries.nth(1).locator('.question').innerText()).trim() === question, 'the first question is not kept below the new one');
  const secondCls = (await newest.getAttribute('class')) ?? '';
  mark(`second question ("${second}"): ${secondCls}; ${secondCls.includes('refused') ? 'refused, as it should' : 'NOT refused'}`);
  await page.screenshot({ path: path.join(outDir, 'history.png') });

  // ---- a closest answer: its grade label, prominent, above the quoted passages -------------
  // Where the line between "answer" and "closest" falls is the server's calibration: the
  // first of these everyday questions it grades "closest" is the one checked.
  const closestCandidates = opt('closest-question') ? [opt('closest-question')] : ['how do I install it', 'Is it any good?', 'What can I do with it?', 'how does it work'];
  let closest;
  let closestGrade;
  let closestQuestion;
  const gradedAs = [];
  for (const q of closestCandidates) {
    const e = await askAndWait(page, q);
    const g = await shownGrade(e);
    gradedAs.push(`"${q}": ${g?.grade ?? 'no grade'}`);
    if (g?.grade === 'closest') {
      closest = e;
      closestGrade = g;
      closestQuestion = q;
      break;
    }
  }
  check(closest, `no question was graded closest (${gradedAs.join(', ')}); pass --closest-question`);
  check(closestGrade.text === GRADE_LABELS.closest, `closest label is "${closestGrade.text}"`);
  const closestLabel = closest.locator('.grade.prominent');
  check(await closestLabel.isVisible(), 'the closest label is not shown prominently');
  const labelBox = await closestLabel.boundingBox();
  const closestAnswerBox = await closest.locator('.answer').boundingBox();
  check(labelBox && closestAnswerBox && labelBox.y < closestAnswerBox.y, 'the closest label is not above the answer');
  check((await closest.locator('ol.citations a.cite').count()) >= 1, 'a closest answer lists no sources');
  mark(`closest: "${closestGrade.text}" shown prominently over ${await closest.locator('ol.citations a.cite').count()} source(s)`);
  await page.screenshot({ path: path.join(outDir, 'closest.png') });

  // ---- a PDF citation opens the bundled viewer at its page, the passage highlighted --------
  const pdfQuestion = opt('pdf-question', 'What does the guide say about PDF pages?');
  const pdfEntry = await askAndWait(page, pdfQuestion);
  const pdfMarker = pdfEntry.locator('.answer a.marker[data-page]').first();
  check((await pdfMarker.count()) === 1, `"${pdfQuestion}" cites no PDF page in its text (pass --pdf-question)`);
  const pdfPath = await pdfMarker.getAttribute('data-path');
  const pdfPage = Number(await pdfMarker.getAttribute('data-page'));
  const pdfN = (await pdfMarker.innerText()).trim();
  const pdfQuote = await pdfEntry.locator('.answer').evaluate((root, n) => {
    let text = '';
    const out = [];
    const visit = (node) => {
      for (const child of node.childNodes) {
        if (child.nodeType === Node.TEXT_NODE) text += child.nodeValue;
        else if (child.nodeType === Node.ELEMENT_NODE && child.matches('a.marker')) {
          if (child.textContent === n) out.push(text);
          text = '';
        } else if (child.nodeType === Node.ELEMENT_NODE) visit(child);
      }
    };
    visit(root);
    return out.join(' ');
  }, pdfN);
  mark(`PDF citation ${pdfN} -> ${pdfPath} page ${pdfPage}; quoted: ${JSON.stringify(pdfQuote.slice(0, 160))}`);
  await pdfMarker.click();
  const viewerFrame = await frameWith(page, '#viewer[data-state="rendered"]', 60_000);
  const viewer = viewerFrame.locator('#viewer');
  check(Number(await viewer.getAttribute('data-page')) === pdfPage, `the viewer shows page ${await viewer.getAttribute('data-page')}, not ${pdfPage}`);
  const nHighlights = Number(await viewer.getAttribute('data-highlights'));
  check(nHighlights >= 1, 'the viewer highlights nothing on the cited page');
  const highlighted = flatten((await viewerFrame.locator('.hl').evaluateAll((els) => els.map((e) => e.dataset.text))).join(' ')).toLowerCase();
  const quoteWords = flatten(pdfQuote).toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  const found = quoteWords.filter((w) => highlighted.includes(w)).length;
  check(quoteWords.length > 0 && found / quoteWords.length >= 0.8, `the highlight does not hold the quoted sentence (${found} of ${quoteWords.length} words): ${highlighted.slice(0, 300)}`);
  check((await viewerFrame.locator('canvas#page-canvas').evaluate((c) => c.width)) > 100, 'the page was not drawn');
  await page.locator('.tabs-container .tab', { hasText: `${path.posix.basename(pdfPath)} · page ${pdfPage}` }).first().waitFor({ state: 'visible', timeout: 10_000 });
  mark(`PDF viewer: ${pdfPath} at page ${pdfPage} of ${await viewer.getAttribute('data-pages')}, ${nHighlights} highlight box(es), ${found}/${quoteWords.length} quoted words highlighted`);
  await page.screenshot({ path: path.join(outDir, 'pdf-viewer.png') });

  // ---- the sidebar lists the answers; history survives a window reload ------------------
  await runCommand(page, 'Citeline: Focus on Recent Answers View');
  for (const q of [question, second, closestQuestion, pdfQuestion]) {
    // (Recent Answers lists every question asked; these four are checked.)
    await sidebarRow(page, q).waitFor({ state: 'visible', timeout: 30_000 });
  }
  mark(`Recent Answers lists the four questions`);
  check(/closest passages/.test((await sidebarRow(page, closestQuestion).getAttribute('aria-label')) ?? ''), 'the closest answer is not marked in Recent Answers');
  await page.screenshot({ path: path.join(outDir, 'sidebar-history.png') });

  await runCommand(page, 'Developer: Reload Window');
  await page.waitForTimeout(2000);
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 90_000 });
  const statusAfter = citelineStatus(page);
  await statusAfter.waitFor({ state: 'visible', timeout: 120_000 });
  const reloadEnd = Date.now() + READY_TIMEOUT;
  while (!/Citeline: ready/.test(await statusAfter.innerText())) {
    if (Date.now() > reloadEnd) throw new Error(`not ready after the reload: ${await statusAfter.innerText()}`);
    await sleep(250);
  }
  mark(`reloaded: status bar "${(await statusAfter.innerText()).trim()}"`);
  await runCommand(page, 'Citeline: Focus on Recent Answers View');
  const kept = sidebarRow(page, question);
  await kept.waitFor({ state: 'visible', timeout: 60_000 });
  mark(`after the reload, Recent Answers still lists "${question}"`);
  await kept.click();
  const panelAfter = await answerFrame(page, 60_000);
  const reopened = panelAfter.locator('#history .entry', { hasText: question }).first();
  await reopened.waitFor({ state: 'attached', timeout: 30_000 });
  check((await reopened.locator('.recorded').count()) === 1, 'the reopened answer does not say it is from history');
  check(flatten(await reopened.locator('.answer').innerText()) === flatten(answerText), 'the reopened answer is not the answer given before the reload');
  check((await reopened.locator('ol.citations a.cite').count()) === nCitations, 'the reopened answer lost its sources');
  check((await reopened.locator('.stale').count()) === 0, 'an answer whose sources did not change says they changed');
  mark(`reopened from history: "${(await reopened.locator('.recorded').innerText()).trim()}", ${nCitations} source(s), not stale`);
  await page.screenshot({ path: path.join(outDir, 'history-reopened.png') });

  // ---- a stale answer: its cited file changed since -----------------------------------------
  const citedFile = path.join(workspace, ...quoted.path.split('/'));
  fs.appendFileSync(citedFile, '\n\nA paragraph added after the answer was given.\n');
  await sleep(3000);
  await runCommand(page, 'Citeline: Focus on Recent Answers View');
  await sidebarRow(page, question).click();
  const stale = (await answerFrame(page, 30_000)).locator('#history .entry', { hasText: question }).first().locator('.stale');
  await stale.waitFor({ state: 'visible', timeout: 30_000 });
  mark(`after editing ${quoted.path}: "${(await stale.innerText()).trim()}"`);
  await page.screenshot({ path: path.join(outDir, 'history-stale.png') });

  // ---- status view ---------------------------------------------------------------
  await citelineStatus(page).click();
  await page.locator('.tabs-container .tab', { hasText: 'Citeline Status' }).first().waitFor({ state: 'visible', timeout: 30_000 });
  mark('status view opened from the status bar item');

  console.log(`E2E TIMINGS ready=${timings.ready}s answer=${timings.answer}s total=${secs()}s`);
  console.log('E2E PASSED');
} catch (e) {
  failed = true;
  console.error('E2E FAILED:', e && e.message ? e.message : e);
  await page.screenshot({ path: path.join(outDir, 'failure.png') }).catch(() => {});
  // What the window showed when it stopped: the status bar, the sidebar's rows, the toasts.
  const shown = async (selector, attr) =>
    page.locator(selector).evaluateAll((els, a) => els.map((el) => (a ? el.getAttribute(a) : el.innerText) || '').filter(Boolean), attr).catch(() => []);
  for (const [what, selector, attr] of [
    ['status bar', '.statusbar-item', 'aria-label'],
    ['sidebar rows', '.part.sidebar .monaco-list-row', 'aria-label'],
    ['notifications', '.notification-toast', null],
  ]) {
    const items = (await shown(selector, attr)).map((t) => t.replace(/\s+/g, ' ').trim().slice(0, 200));
    console.error(`E2E SHOWN ${what}: ${items.length ? items.join(' | ') : '(none)'}`);
  }
} finally {
  await context.close().catch(() => {});
  fs.rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
