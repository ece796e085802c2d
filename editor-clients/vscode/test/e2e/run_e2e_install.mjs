// The install path in a real VS Code (code-server + headless Chromium), from a clean
// profile with no `citeline` on the PATH (scripts/e2e-install.sh sets that up):
//
//   --phase install   a folder with citeline.toml: the one install offer appears, is
//                     accepted, its progress shows, the server starts, an ask is
//                     answered and cited; no generic "couldn't create connection" toast.
//   --phase unmarked  a folder without citeline.toml or .citeline/: the workbench
//                     runs, a document is open, no Citeline notification or status bar
//                     item shows, and no server is started (the process list is checked
//                     by e2e-install.sh).
//   --phase named     the same folder with the documents folder named in the user's
//                     citeline.folders setting: the server starts and the status bar says
//                     ready, with no install offer (the server is already installed).
//   --phase python    a folder with citeline.toml, with the Python extension's API (the
//                     stand-in in python-extension-api/) selecting an interpreter that has
//                     Citeline: the server starts and is ready, with no install offer
//                     (e2e-install.sh checks from the process list that it runs from that
//                     interpreter).
//   --phase folders   --workspace is a .code-workspace file whose one folder has no marker,
//                     --add a documents folder with citeline.toml, --pgid code-server's
//                     process group, --logs its logs folder: no server at first; the
//                     documents folder added to the workspace file (as editing it, or "Add
//                     Folder to Workspace…", does) is served without a window reload
//                     (status bar ready, a server in the process group); removed again, the
//                     server process stops and the status bar item goes.
//
//   node run_e2e_install.mjs --phase install|unmarked|named|python|folders --url URL --workspace DIR --out DIR
import { execFileSync } from 'node:child_process';
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
const phase = opt('phase');
const url = opt('url');
const workspace = opt('workspace');
const outDir = opt('out', process.cwd());
const question = opt('question', 'Where does Citeline store its index?');
const PHASES = ['install', 'unmarked', 'named', 'python', 'folders'];
if (!url || !workspace || !PHASES.includes(phase) || (phase === 'folders' && !(opt('add') && opt('pgid') && opt('logs')))) {
  console.error(`usage: node run_e2e_install.mjs --phase ${PHASES.join('|')} --url URL --workspace DIR --out DIR [--add DIR --pgid N --logs DIR]`);
  process.exit(2);
}
const u = new URL(url);
if (u.hostname !== '127.0.0.1' && u.hostname !== 'localhost') throw new Error('loopback only');
fs.mkdirSync(outDir, { recursive: true });

const t0 = Date.now();
const secs = () => ((Date.now() - t0) / 1000).toFixed(1);
const mark = (msg) => console.log(`[e2e-install ${phase} +${secs()}s] ${msg}`);
const check = (cond, msg) => {
  if (!cond) throw new Error(msg);
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const shot = async (page, name) => {
  await page.screenshot({ path: path.join(outDir, name) });
  mark(`screenshot ${path.join(outDir, name)}`);
};

async function runCommand(page, title, timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  for (;;) {
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

/** The Citeline servers among the processes of code-server's process group (`ps`). */
function serversOf(pgid) {
  return execFileSync('ps', ['-eo', 'pgid=,args='], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.split(/\s+/, 1)[0] === String(pgid) && /citeline(\.cli)? serve/.test(l))
    .map((l) => l.replace(/^\d+\s+/, ''));
}

/** The lines of the Citeline output channel's logs (one file per extension host) under `dir`. */
function citelineLogs(dir) {
  const found = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/Citeline\.log$/.test(e.name)) found.push(p);
    }
  };
  walk(dir);
  return found;
}

/** The one folder list of a .code-workspace file, written as a user's edit would. */
function writeWorkspaceFolders(file, folders) {
  const ws = JSON.parse(fs.readFileSync(file, 'utf8'));
  ws.folders = folders.map((f) => ({ path: f }));
  fs.writeFileSync(file, JSON.stringify(ws, null, 2));
}

/** The texts of the notification toasts now shown. */
async function toastTexts(page) {
  return (await page.locator('.notifications-toasts .notification-toast').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim());
}

async function answerFrame(page, timeoutMs) {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    for (const frame of page.frames()) {
      try {
        if ((await frame.locator('#history').count()) > 0) return frame;
      } catch {
        // detached
      }
    }
    await sleep(250);
  }
  throw new Error('answer panel (webview with #history) did not appear');
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'citeline-e2e-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1500, height: 950 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = context.pages()[0] || (await context.newPage());
page.on('pageerror', (e) => console.log('[pageerror]', String(e).slice(0, 300)));
let failed = false;
const seenToasts = new Set();
const watchToasts = async () => {
  for (const t of await toastTexts(page).catch(() => [])) {
    if (!seenToasts.has(t)) {
      seenToasts.add(t);
      mark(`toast: ${t.slice(0, 200)}`);
    }
  }
};
/** Waits until the Citeline status bar item's text matches `re`; logs each text it shows. */
async function waitStatus(page, re, timeoutMs) {
  const status = page.locator('.statusbar-item', { hasText: 'Citeline:' }).first();
  let last = '';
  const end = Date.now() + timeoutMs;
  for (;;) {
    await watchToasts();
    const text = (await status.innerText({ timeout: 1000 }).catch(() => '')).trim().replace(/\s+/g, ' ');
    if (text !== last) {
      mark(`status bar: "${text}"`);
      last = text;
    }
    if (re.test(text)) return text;
    if (Date.now() > end) throw new Error(`status bar not ${re} after ${timeoutMs / 1000} s: "${text}"`);
    await sleep(500);
  }
}
try {
  const target = phase === 'folders' ? `workspace=${encodeURIComponent(workspace)}` : `folder=${encodeURIComponent(workspace)}`;
  await page.goto(`${u.origin}/?${target}`, { waitUntil: 'domcontentloaded', timeout: 60_000 });
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 90_000 });
  mark('workbench visible');

  if (phase === 'unmarked') {
    // Open a document of the folder, as a user would, then give activation time.
    await page.keyboard.press('Control+P');
    await page.locator('.quick-input-widget input.input').fill('notes.md');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'notes.md' }).first().waitFor({ state: 'visible', timeout: 30_000 });
    await page.keyboard.press('Enter');
    await page.locator('.tab', { hasText: 'notes.md' }).first().waitFor({ state: 'visible', timeout: 30_000 });
    mark('notes.md open');
    for (let i = 0; i < 40; i++) {
      await watchToasts();
      await sleep(500);
    }
    const citelineItems = await page.locator('.statusbar-item', { hasText: 'Citeline' }).count();
    mark(`Citeline status bar items: ${citelineItems}`);
    check(![...seenToasts].some((t) => /Citeline/.test(t)), 'a Citeline notification appeared in a window without a documents folder');
    check(citelineItems === 0, 'a Citeline status bar item shows in a window without a documents folder');
    await shot(page, 'unmarked-window.png');
  } else if (phase === 'named' || phase === 'python') {
    // named: the folder is in the user's settings and has no marker; python: the folder is
    // marked and the server comes from the Python extension's interpreter. Either way the
    // server starts by itself, with no install offer (one is installed in the profile).
    await waitStatus(page, /Citeline: ready/, 600_000);
    check(![...seenToasts].some((t) => /Citeline's server is not installed|could not start the server/i.test(t)), `an install offer or error appeared: ${[...seenToasts].join(' | ')}`);
    await shot(page, `${phase}-window.png`);
  } else if (phase === 'folders') {
    const docs = opt('add');
    const pgid = opt('pgid');
    const [first] = JSON.parse(fs.readFileSync(workspace, 'utf8')).folders.map((f) => f.path);
    // ---- no marked folder: nothing of Citeline, no server ----------------------------------
    for (let i = 0; i < 20; i++) {
      await watchToasts();
      await sleep(500);
    }
    check(serversOf(pgid).length === 0, `a server runs before a documents folder was added: ${serversOf(pgid).join(' | ')}`);
    check((await page.locator('.statusbar-item', { hasText: 'Citeline' }).count()) === 0, 'a Citeline status bar item shows before a documents folder was added');
    const hostsBefore = citelineLogs(opt('logs')).length;
    mark(`no server, no status bar item; ${hostsBefore} extension host log(s)`);

    // ---- a documents folder added to the window: served, without a reload -------------------
    writeWorkspaceFolders(workspace, [first, docs]);
    mark(`added ${docs} to ${workspace}`);
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: path.basename(docs) }).first().waitFor({ state: 'attached', timeout: 60_000 }).catch(() => mark('(the explorer row of the added folder did not show; the status bar decides)'));
    await waitStatus(page, /Citeline: ready/, 600_000);
    const servers = serversOf(pgid);
    mark(`server processes: ${servers.join(' | ')}`);
    check(servers.length === 1, `not one server after the folder was added: ${servers.join(' | ')}`);
    const logs = citelineLogs(opt('logs'));
    check(logs.length === hostsBefore, `the extension host restarted (${logs.length} Citeline logs, ${hostsBefore} before): the added folder must be served by the running extension`);
    check(logs.some((l) => fs.readFileSync(l, 'utf8').includes(`workspace folders changed: added ${docs}`)), 'the extension did not log the added workspace folder');
    await shot(page, 'folder-added.png');

    // ---- removed again: no longer served, and the server process stops ----------------------
    writeWorkspaceFolders(workspace, [first]);
    mark(`removed ${docs} from ${workspace}`);
    const end = Date.now() + 120_000;
    while (serversOf(pgid).length > 0) {
      check(Date.now() < end, `the server still runs 120 s after its only documents folder was removed: ${serversOf(pgid).join(' | ')}`);
      await sleep(500);
    }
    mark('the server process stopped');
    const itemEnd = Date.now() + 30_000;
    while ((await page.locator('.statusbar-item', { hasText: 'Citeline' }).count()) > 0) {
      check(Date.now() < itemEnd, `a Citeline status bar item still shows 30 s after the server stopped: ${await page.locator('.statusbar-item', { hasText: 'Citeline' }).first().innerText()}`);
      await sleep(250);
    }
    mark('no Citeline status bar item');
    check(![...seenToasts].some((t) => /Citeline/.test(t)), `a Citeline notification appeared: ${[...seenToasts].join(' | ')}`);
    await shot(page, 'folder-removed.png');
  } else {
    // ---- the one install offer --------------------------------------------------------
    const offer = page.locator('.notifications-toasts .notification-toast', { hasText: "Citeline's server is not installed" }).first();
    await offer.waitFor({ state: 'visible', timeout: 120_000 });
    const offeredAt = Date.now();
    mark(`offer: ${(await offer.innerText()).replace(/\s+/g, ' ').trim()}`);
    await shot(page, 'install-offer.png');
    const install = offer.locator('.monaco-button', { hasText: /^Install \(\d+ MB, offline\)$/ }).first();
    check((await install.count()) === 1, 'the offer has no "Install (N MB, offline)" button');
    await install.click();
    mark('install accepted');

    // ---- its progress, then the server ready -------------------------------------------
    const progress = page.locator('.notifications-toasts .notification-toast', { hasText: 'Citeline: installing the server' }).first();
    await progress.waitFor({ state: 'visible', timeout: 60_000 });
    mark(`progress: ${(await progress.innerText()).replace(/\s+/g, ' ').trim()}`);
    await shot(page, 'install-progress.png');
    const status = page.locator('.statusbar-item', { hasText: 'Citeline:' }).first();
    let last = '';
    const end = Date.now() + 900_000;
    for (;;) {
      await watchToasts();
      const text = (await status.innerText().catch(() => '')).trim().replace(/\s+/g, ' ');
      if (text !== last) {
        mark(`status bar: "${text}"`);
        last = text;
      }
      if (/Citeline: ready/.test(text)) break;
      if (Date.now() > end) throw new Error(`not ready 900 s after the install was accepted: ${text}`);
      await sleep(500);
    }
    mark(`install accepted -> server ready: ${((Date.now() - offeredAt) / 1000).toFixed(1)} s`);
    check(![...seenToasts].some((t) => /couldn't create connection|could not start the server/i.test(t)), `a second error toast appeared: ${[...seenToasts].join(' | ')}`);
    check(![...seenToasts].some((t) => /Citeline's server is not installed/.test(t)), 'the install offer appeared again after it was accepted');

    // ---- an ask, answered and cited ----------------------------------------------------------
    await runCommand(page, 'Citeline: Ask a Question');
    await page.locator('.quick-input-widget', { hasText: 'Ask your documents' }).waitFor({ state: 'visible', timeout: 15_000 });
    await page.locator('.quick-input-widget input.input').fill(question);
    await page.keyboard.press('Enter');
    const askedAt = Date.now();
    const frame = await answerFrame(page, 60_000);
    const entry = frame.locator('#history .entry').first();
    await entry.waitFor({ state: 'attached', timeout: 30_000 });
    const answerEnd = Date.now() + 300_000;
    for (;;) {
      const cls = (await entry.getAttribute('class')) ?? '';
      if (!cls.includes('state-streaming')) break;
      if (Date.now() > answerEnd) throw new Error('no answer after 300 s');
      await sleep(200);
    }
    const cls = (await entry.getAttribute('class')) ?? '';
    const answer = (await entry.locator('.answer').innerText().catch(() => '')).trim();
    mark(`answer in ${((Date.now() - askedAt) / 1000).toFixed(1)} s (${cls}): ${JSON.stringify(answer.slice(0, 300))}`);
    check(cls.includes('state-done') && !cls.includes('refused'), `the ask was not answered: ${cls}`);
    const cites = await entry.locator('ol.citations a.cite').allInnerTexts();
    check(cites.length >= 1, 'the answer has no citations');
    mark(`citations: ${cites.map((c) => c.replace(/\s+/g, ' ').trim()).join(' | ')}`);
    check(cites.some((c) => /\.md/.test(c)), 'no citation names a document');
    await shot(page, 'install-answer.png');
  }
} catch (error) {
  failed = true;
  console.error(`[e2e-install ${phase}] FAILED: ${error instanceof Error ? error.message : String(error)}`);
  await page.screenshot({ path: path.join(outDir, `failure-${phase}.png`) }).catch(() => undefined);
} finally {
  await context.close().catch(() => undefined);
  fs.rmSync(profile, { recursive: true, force: true });
}
console.log(failed ? `E2E INSTALL ${phase} FAILED` : `E2E INSTALL ${phase} PASSED (${secs()} s)`);
process.exit(failed ? 1 : 0);
