// The unit-tested modules must not depend on `vscode` (they run under plain node).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

const PURE = ['protocol.ts', 'citations.ts', 'answerMarkup.ts', 'answerRender.ts', 'settings.ts', 'statusModel.ts', 'serverSetup.ts', 'answerCopy.ts', 'sidebarModel.ts', 'pdfMatch.ts', 'pdfViewerPage.ts'];

test('pure modules import nothing from vscode', () => {
  const src = path.join(__dirname, '..', '..', '..', 'src');
  for (const file of PURE) {
    const text = fs.readFileSync(path.join(src, file), 'utf8');
    assert.ok(!/from\s+['"]vscode['"]|require\(['"]vscode['"]\)|from\s+['"]vscode-languageclient/.test(text), `${file} imports vscode`);
  }
});
