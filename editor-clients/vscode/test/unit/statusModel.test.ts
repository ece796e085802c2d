import assert from 'node:assert/strict';
import { test } from 'node:test';

import type { FolderStatus, StatusResult } from '../../src/protocol';
import { folderName, joinUri, renderStatusMarkdown, statusItemVisible, summarizeStatus } from '../../src/statusModel';

function folder(over: Partial<FolderStatus> = {}): FolderStatus {
  return { uri: 'file:///home/me/notes', state: 'ready', files: 8, chunks: 120, pending: 0, errors: [], ...over };
}
function status(...folders: FolderStatus[]): StatusResult {
  return { folders, models: { embedding: 'all-MiniLM-L6-v2.gguf', generation: 'SmolLM2-135M-Instruct.Q4_1.gguf' } };
}

test('client states come first', () => {
  assert.equal(summarizeStatus(status(folder()), undefined, 'starting').overall, 'starting');
  assert.equal(summarizeStatus(undefined, undefined, 'running').text, '$(loading~spin) Citeline: starting');
  assert.equal(summarizeStatus(status(folder()), undefined, 'stopped').text, '$(circle-slash) Citeline: stopped');
  const failed = summarizeStatus(undefined, undefined, 'failed');
  assert.equal(failed.overall, 'error');
  assert.match(failed.tooltip, /Show Logs/);
});

test('a window with no documents folder and no server shows no status item', () => {
  assert.equal(statusItemVisible('stopped', false), false);
  assert.equal(statusItemVisible('stopped', true), true);
  for (const state of ['starting', 'running', 'failed'] as const) {
    assert.equal(statusItemVisible(state, false), true, state);
  }
});

test('the status item shows once the user opened the sidebar, although nothing is served', () => {
  // The sidebar lists the window's folders as "not served" with Index This Folder: the
  // status bar then says there is nothing served rather than nothing at all.
  assert.equal(statusItemVisible('stopped', false, true), true);
  assert.equal(statusItemVisible('stopped', false, false), false);
});

test('ready with file and chunk counts summed over folders', () => {
  const s = summarizeStatus(status(folder(), folder({ uri: 'file:///b', files: 1, chunks: 3 })), undefined, 'running');
  assert.equal(s.overall, 'ready');
  assert.equal(s.text, '$(book) Citeline: ready · 9 files · 123 chunks');
  assert.match(s.tooltip, /notes: ready, 8 files, 120 chunks/);
  assert.match(s.tooltip, /models: all-MiniLM/);
  const one = summarizeStatus(status(folder({ files: 1, chunks: 1 })), undefined, 'running');
  assert.equal(one.text, '$(book) Citeline: ready · 1 file · 1 chunk');
});

test('documents that could not be indexed show as a warning count', () => {
  const s = summarizeStatus(status(folder({ errors: [{ path: 'scan.pdf', message: 'PDF has no text layer (scanned?)' }] })), undefined, 'running');
  assert.equal(s.text, '$(book) Citeline: ready · 8 files · 120 chunks · $(warning) 1');
  assert.match(s.tooltip, /1 document not indexed/);
});

test('indexing: percentage from progress, else pending count', () => {
  const st = status(folder({ state: 'indexing', pending: 4 }), folder({ uri: 'file:///b' }));
  assert.equal(summarizeStatus(st, { percentage: 41.6, message: 'how-indexing-works.md' }, 'running').text, '$(sync~spin) Citeline: indexing 42%');
  assert.match(summarizeStatus(st, { percentage: 41.6, message: 'how-indexing-works.md' }, 'running').tooltip, /now: how-indexing-works\.md/);
  assert.equal(summarizeStatus(st, undefined, 'running').text, '$(sync~spin) Citeline: indexing (4 pending)');
});

test('any folder in error makes the whole state an error', () => {
  const s = summarizeStatus(status(folder({ state: 'indexing' }), folder({ state: 'error', message: 'cannot load model' })), undefined, 'running');
  assert.equal(s.overall, 'error');
  assert.equal(s.text, '$(error) Citeline: error');
  assert.match(s.tooltip, /cannot load model/);
});

test('no folders: "no folder", unless the workspace has folders the daemon has not opened yet', () => {
  assert.equal(summarizeStatus({ folders: [] }, undefined, 'running').overall, 'empty');
  assert.equal(summarizeStatus({ folders: [] }, undefined, 'running', { expectFolders: true }).overall, 'starting');
});

test('folder names and URIs', () => {
  assert.equal(folderName('file:///home/me/my%20notes/'), 'my notes');
  assert.equal(joinUri('file:///n/', 'zh/常见问题.md'), 'file:///n/zh/%E5%B8%B8%E8%A7%81%E9%97%AE%E9%A2%98.md');
});

test('status view lists folders, models and the documents that could not be indexed', () => {
  const md = renderStatusMarkdown(
    status(folder({ errors: [{ path: 'scan.pdf', message: 'PDF has no text layer (scanned?)' }] })),
    'running',
    { command: '/ws/.venv/bin/python -m citeline.cli serve' },
  );
  assert.match(md, /^# Citeline status/);
  assert.match(md, /\*\*Citeline: ready · 8 files · 120 chunks · 1\*\*/);
  assert.match(md, /Server: `\/ws\/\.venv\/bin\/python -m citeline\.cli serve`/);
  assert.match(md, /## notes/);
  assert.match(md, /- \[scan\\\.pdf\]\(file:\/\/\/home\/me\/notes\/scan\.pdf\): PDF has no text layer \\\(scanned\?\\\)/);
});

test('a team index shows its collection and generation in the status bar and the view', () => {
  const team = folder({
    collection: 'docs',
    generation: 42,
    read_only: true,
    last_update: '2026-03-02T10:41:07+0100',
    index: 'postgresql://ci@db/citeline#docs',
  });
  const s = summarizeStatus(status(team), undefined, 'running');
  assert.equal(s.text, '$(book) Citeline: ready · 8 files · 120 chunks · $(cloud) docs #42');
  assert.match(s.tooltip, /team index docs \(read-only\), generation 42, updated 2026-03-02T10:41:07\+0100/);
  const view = renderStatusMarkdown(status(team), 'running');
  assert.match(view, /team index docs \\\(read\\-only\\\), generation 42/);
  assert.match(view, /postgresql:\/\/ci@db\/citeline\\#docs/);
  const own = summarizeStatus(status(folder()), undefined, 'running');
  assert.doesNotMatch(own.text, /cloud/);
});

test('opened folders the server does not serve: "not indexed", with the reason, never "starting" forever', () => {
  const s = summarizeStatus(
    { folders: [], unserved: [{ uri: 'file:///home/me/code', docs: '/home/me/code', reason: 'not served: no citeline.toml or .citeline/ folder in it' }] },
    undefined,
    'running',
    { expectFolders: true },
  );
  assert.equal(s.overall, 'empty');
  assert.equal(s.text, '$(book) Citeline: folder not indexed');
  assert.match(s.tooltip, /code: not served: no citeline\.toml/);
  assert.match(s.tooltip, /Index This Folder/);
});

test('paused: the status bar says so with the files waiting, before indexing; an error still comes first', () => {
  const paused = folder({ paused: true, pending: 12 });
  const s = summarizeStatus(status(paused), { percentage: 8 }, 'running');
  assert.equal(s.overall, 'paused');
  assert.equal(s.text, '$(debug-pause) Citeline: paused · 12 files waiting');
  assert.match(s.tooltip, /notes: paused, 8 files, 120 chunks, 12 files waiting/);
  assert.match(s.tooltip, /Resume Indexing/);
  // While the batch finishes the file it was committing, the folder is still "indexing": "pausing".
  const pausing = summarizeStatus(status(folder({ ...paused, state: 'indexing' })), undefined, 'running');
  assert.deepEqual([pausing.overall, pausing.text], ['paused', '$(debug-pause) Citeline: pausing…']);
  assert.match(pausing.tooltip, /notes: pausing/);
  const other = folder({ uri: 'file:///b', state: 'indexing' });
  assert.match(summarizeStatus(status(paused, other), undefined, 'running').tooltip, /paused \(notes\)/);
  assert.equal(summarizeStatus(status(paused, folder({ uri: 'file:///c', state: 'error' })), undefined, 'running').overall, 'error');
  assert.match(renderStatusMarkdown(status(paused), 'running'), /- state: \*\*paused\*\*/);
});
