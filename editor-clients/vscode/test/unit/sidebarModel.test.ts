// The sidebar's rows: folders, indexing runs, problems, recent answers, the folder picker.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { folderChoices, folderRows, historyRow, indexingRows, insideFolders, problemRows, progressFolder, recordedEntry, timeAgo, unservedRows, workspaceRows } from '../../src/sidebarModel';
import type { FolderStatus, HistoryEntry, HistoryItem, StatusResult } from '../../src/protocol';
import { answer, citation } from './fixtures';

function folder(over: Partial<FolderStatus> = {}): FolderStatus {
  return { uri: 'file:///home/me/notes', state: 'ready', files: 8, chunks: 913, pending: 0, errors: [], docs: '/home/me/notes', ...over };
}

const two: StatusResult = { folders: [folder(), folder({ uri: 'file:///home/me/team%20docs', docs: '/home/me/team docs', state: 'indexing', pending: 3 })] };

test('folder rows: state, counts, pending and problems', () => {
  const rows = folderRows({ folders: [folder({ errors: [{ path: 'broken.pdf', message: 'not a PDF' }] }), folder({ uri: 'file:///x/y', state: 'error', message: 'no model' })] });
  assert.equal(rows[0].label, 'notes');
  assert.equal(rows[0].description, 'ready · 8 files · 913 chunks · 1 problem');
  assert.equal(rows[0].problems, 1);
  assert.equal(rows[1].description, 'error');
  assert.match(rows[1].tooltip, /error: no model/);
  assert.equal(folderRows(two)[1].label, 'team docs');
  assert.equal(folderRows(two)[1].description, 'indexing · 8 files · 913 chunks · 3 pending');
  assert.deepEqual(folderRows(undefined), []);
});

test('indexing runs: one row per token, named by the folder its progress title names', () => {
  assert.equal(progressFolder('Citeline: indexing notes'), 'notes');
  assert.equal(progressFolder('something else'), undefined);
  const rows = indexingRows(new Map<string | number, { title?: string; percentage?: number; message?: string }>([
    ['t1', { title: 'Citeline: indexing notes', percentage: 41.6, message: 'ops/postgres.md' }],
    [7, { title: 'Citeline: indexing', message: 'scanning…' }],
  ]));
  assert.deepEqual(rows[0], { token: 't1', label: 'Indexing notes', description: '42% · ops/postgres.md', percentage: 41.6, folder: undefined, paused: false });
  assert.equal(rows[1].label, 'Indexing');
  assert.equal(rows[1].description, 'scanning…');
  assert.equal(rows[1].token, 7);
});

test('a paused folder: its row says paused and how many files wait; its run too, named by folder', () => {
  const paused = folder({ paused: true, pending: 12, files: 3, chunks: 40 });
  const [row] = folderRows({ folders: [paused] });
  assert.equal(row.description, 'paused · 3 files · 40 chunks · 12 files waiting');
  assert.equal(row.paused, true);
  assert.equal(row.state, 'ready');
  assert.match(row.tooltip, /paused/);
  assert.equal(folderRows({ folders: [folder()] })[0].paused, false);
  assert.match(folderRows({ folders: [{ ...paused, state: 'indexing' }] })[0].description, /^pausing · /);
  assert.equal(folderRows({ folders: [{ ...paused, state: 'error', message: 'no model' }] })[0].description, 'error · 12 files waiting');
  const runs = new Map([['t1', { title: 'Citeline: indexing notes', percentage: 8, message: 'paused · 12 files waiting' }]]);
  const [run] = indexingRows(runs, { folders: [paused] });
  assert.equal(run.description, 'paused · 8% · 12 files waiting');
  assert.equal(run.folder, 'file:///home/me/notes');
  assert.equal(run.paused, true);
  // Resumed: the run is an ordinary one again, and still knows its folder.
  const [resumed] = indexingRows(new Map([['t1', { title: 'Citeline: indexing notes', percentage: 9, message: 'a.md' }]]), { folders: [folder({ state: 'indexing', pending: 11 })] });
  assert.deepEqual([resumed.description, resumed.paused, resumed.folder], ['9% · a.md', false, 'file:///home/me/notes']);
  // Two served folders of one name: the run's folder is not guessed.
  assert.equal(indexingRows(runs, { folders: [paused, folder({ uri: 'file:///elsewhere/notes' })] })[0].folder, undefined);
  assert.equal(folderChoices({ folders: [paused, folder({ uri: 'file:///b' })] })[1].description, '/home/me/notes · paused');
});

test('problems: every document that could not be indexed, with its folder', () => {
  const rows = problemRows({ folders: [folder({ errors: [{ path: 'a.pdf', message: 'encrypted' }] }), folder({ uri: 'file:///b', errors: [{ path: 'c.bin', message: 'binary' }] })] });
  assert.deepEqual(rows, [
    { folder: 'file:///home/me/notes', path: 'a.pdf', message: 'encrypted' },
    { folder: 'file:///b', path: 'c.bin', message: 'binary' },
  ]);
});

test('recent answers: the question, its grade when not a plain answer, sources and when', () => {
  const now = Date.parse('2026-12-01T23:00:00Z');
  const item: HistoryItem = { id: 'a1', time: '2026-12-01T22:55:00Z', folder: 'file:///home/me/notes', question: 'Where is\nthe index?', grade: 'answer', grade_label: 'Answer', mode: 'extractive', preview: 'The index lives…', sources: 2 };
  assert.deepEqual(historyRow(item, now), {
    id: 'a1',
    label: 'Where is the index?',
    description: '2 sources · 5 min ago',
    tooltip: 'Where is\nthe index?\nAnswer · 2 sources · 2026-12-01T22:55:00Z\nnotes\n\nThe index lives…',
    grade: 'answer',
  });
  const closest = { ...item, grade: 'closest', grade_label: 'Closest passages — they may not answer the question' };
  assert.equal(historyRow(closest, now).description, 'closest passages · 2 sources · 5 min ago');
  assert.match(historyRow(closest, now).tooltip, /Closest passages — they may not answer the question/);
  // The server's words for the grade, verbatim; without them, the grade itself.
  assert.match(historyRow({ ...item, grade_label: undefined }, now).tooltip, /\nanswer · 2 sources/);
  assert.equal(historyRow({ ...item, grade: 'refused', sources: 0 }, now, { showFolder: true }).description, 'not found · 5 min ago · notes');
});

test('timeAgo', () => {
  const now = Date.parse('2026-12-10T12:00:00Z');
  assert.equal(timeAgo('2026-12-10T11:59:30Z', now), 'just now');
  assert.equal(timeAgo('2026-12-10T09:00:00Z', now), '3 h ago');
  assert.equal(timeAgo('2026-12-08T12:00:00Z', now), '2 days ago');
  assert.equal(timeAgo('2026-11-01T12:00:00Z', now), '2026-11-01');
  assert.equal(timeAgo('not a time', now), 'not a time');
});

test('folder picker: none for one folder; all folders plus each, the last used first', () => {
  assert.deepEqual(folderChoices({ folders: [folder()] }), []);
  const choices = folderChoices(two);
  assert.deepEqual(choices.map((c) => [c.label, c.folder]), [
    ['All folders', undefined],
    ['notes', 'file:///home/me/notes'],
    ['team docs', 'file:///home/me/team%20docs'],
  ]);
  assert.deepEqual(folderChoices(two, 'file:///home/me/team%20docs').map((c) => c.label), ['team docs', 'All folders', 'notes']);
});

test('a recorded answer reopens as a finished panel entry, stale when a source changed', () => {
  const recorded: HistoryEntry = { ...answer({ citations: [citation({ changed: true })] }), id: 'a1', time: '2026-12-01T22:55:00Z', stale: true };
  const entry = recordedEntry(recorded);
  assert.equal(entry.id, 'h-a1');
  assert.equal(entry.state, 'done');
  assert.equal(entry.text, recorded.answer);
  assert.deepEqual(entry.recorded, { id: 'a1', time: '2026-12-01T22:55:00Z', stale: true });
  assert.equal(entry.startedAt, Date.parse('2026-12-01T22:55:00Z'));
  assert.equal(recordedEntry({ ...recorded, stale: false, citations: [citation()] }).recorded?.stale, false);
});

test('insideFolders: only paths inside a served folder', () => {
  const folders = ['/home/me/notes', '/srv/docs/'];
  assert.ok(insideFolders('/home/me/notes/guide.pdf', folders));
  assert.ok(insideFolders('/srv/docs/a/b.pdf', folders));
  assert.ok(!insideFolders('/home/me/notes-old/guide.pdf', folders));
  assert.ok(!insideFolders('/home/me/notes/../secret.pdf', folders));
  assert.ok(!insideFolders('/etc/passwd', folders));
  assert.ok(!insideFolders('/home/me/notes/x.pdf', ['']));
});

test('unserved folders: named, "not served", the reason in the tooltip', () => {
  const rows = unservedRows({ folders: [], unserved: [{ uri: 'file:///home/me/code', docs: '/home/me/code', reason: 'no citeline.toml' }] });
  assert.deepEqual(rows, [{ uri: 'file:///home/me/code', label: 'code', description: 'not served', tooltip: '/home/me/code\nno citeline.toml' }]);
  assert.deepEqual(unservedRows({ folders: [] }), []);
});

test('no server running: the workspace folders, unmarked ones "not served", marked ones waiting for the server', () => {
  const rows = workspaceRows(
    [
      { uri: 'file:///home/me/code', path: '/home/me/code', marked: false },
      { uri: 'file:///home/me/notes', path: '/home/me/notes', marked: true },
    ],
    'stopped',
  );
  assert.deepEqual(rows.map((r) => [r.label, r.description]), [
    ['code', 'not served'],
    ['notes', 'not started'],
  ]);
  assert.match(rows[0].tooltip, /Index This Folder/);
  assert.equal(workspaceRows([{ uri: 'file:///n', path: '/n', marked: true }], 'failed')[0].description, 'server not running');
});
