// The install path in a real VS Code (code-server + headless Chromium), from a clean
// profile with no `citeline` on the PATH (scripts/e2e-install.sh sets that up):
//
//   --phase install   a folder with citeline.toml: the one install offer appears, is
//                     accepted, its progress shows, the server starts, an ask is
//                     answered and cited; no generic "couldn't create connection" toast.
//   --phase unmarked  a folder without citeline.toml or .citeline/: the workbench
//                     runs, a document is open, and no server is started (the process
//                     list is checked by e2e-install.sh).
//
//   node run_e2e_install.mjs --phase install|unmarked --url URL --workspace DIR --out DIR
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
if (!url || !workspace || !['install', 'unmarked'].includes(phase)) {
  console.error('usage: node run_e2e_install.mjs --phase install|unmarked --url URL --workspace DIR --out DIR');
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
try {
  await page.goto(`${u.origin}/?folder=${encodeURIComponent(workspace)}`, { waitUntil: 'domcontentloaded', timeout: 60_000 });
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
    await shot(page, 'unmarked-window.png');
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
