import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';

import {
  choosePython,
  interpreterOf,
  failureLine,
  installSteps,
  isMarked,
  megabytes,
  needsServer,
  onPath,
  ownServerLayout,
  readWheelhouse,
  stoppedFolderNotices,
} from '../../src/serverSetup';
import type { FolderStatus } from '../../src/protocol';

function tempTree(files: string[]): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'citeline-setup-'));
  for (const f of files) {
    const p = path.join(root, f);
    if (f.endsWith('/')) {
      fs.mkdirSync(p, { recursive: true });
    } else {
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, '');
    }
  }
  return root;
}

test('a folder is marked by citeline.toml or .citeline/, nothing else', () => {
  const root = tempTree(['toml/citeline.toml', 'index/.citeline/', 'code/package.json', 'code/docs/citeline.toml']);
  const exists = (p: string) => fs.existsSync(p);
  assert.equal(isMarked(path.join(root, 'toml'), exists), true);
  assert.equal(isMarked(path.join(root, 'index'), exists), true);
  assert.equal(isMarked(path.join(root, 'code'), exists), false); // a marker deeper down does not count
});

test('a window needs the server only for a marked or a named folder', () => {
  const root = tempTree(['docs/citeline.toml', 'code/src/']);
  const exists = (p: string) => fs.existsSync(p);
  assert.equal(needsServer([], undefined, exists), false);
  assert.equal(needsServer([path.join(root, 'code')], [], exists), false);
  assert.equal(needsServer([path.join(root, 'code')], ['  '], exists), false);
  assert.equal(needsServer([path.join(root, 'code')], ['~/notes'], exists), true);
  assert.equal(needsServer([path.join(root, 'code'), path.join(root, 'docs')], undefined, exists), true);
});

test('the wheelhouse says its citeline wheel, its Pythons and its size', () => {
  const info = readWheelhouse([
    { name: 'citeline-0.1.0-py3-none-any.whl', size: 300_000 },
    { name: 'citeline_models-0.1.0-py3-none-any.whl', size: 144_600_000 },
    { name: 'numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl', size: 16_000_000 },
    { name: 'faiss_cpu-1.15.1-cp310-abi3-manylinux_2_27_x86_64.whl', size: 25_000_000 },
    { name: 'SHA256SUMS', size: 4000 },
  ]);
  assert.deepEqual(info, { citeline: 'citeline-0.1.0-py3-none-any.whl', pythons: ['3.11'], bytes: 185_900_000 });
  assert.equal(megabytes(info.bytes), '186 MB');
  assert.equal(readWheelhouse([{ name: 'citeline_models-0.1.0-py3-none-any.whl', size: 1 }]).citeline, undefined);
});

test('the venv is made with a Python 3.11+ the wheelhouse has wheels for', () => {
  const wheelhouse = { citeline: 'citeline-0.1.0-py3-none-any.whl', pythons: ['3.11'], bytes: 1 };
  const candidates = [
    { path: '/usr/bin/python3.10', version: [3, 10] as [number, number] },
    { path: '/broken/python3' },
    { path: '/usr/bin/python3.12', version: [3, 12] as [number, number] },
    { path: '/usr/bin/python3.11', version: [3, 11] as [number, number] },
  ];
  assert.equal(choosePython(candidates, wheelhouse)?.path, '/usr/bin/python3.11');
  assert.equal(choosePython(candidates.slice(0, 3), wheelhouse), undefined);
  assert.equal(choosePython(candidates, { ...wheelhouse, pythons: [] })?.path, '/usr/bin/python3.12');
});

test('the install is a venv in the extension storage and pip from the wheelhouse only', () => {
  const layout = ownServerLayout('/storage/citeline.citeline', 'linux');
  assert.deepEqual(layout, {
    venv: '/storage/citeline.citeline/server-venv',
    python: '/storage/citeline.citeline/server-venv/bin/python',
    citeline: '/storage/citeline.citeline/server-venv/bin/citeline',
  });
  const [venv, pip] = installSteps('/usr/bin/python3.11', layout.venv, layout.python, '/ext/wheelhouse');
  assert.deepEqual([venv.command, ...venv.args], ['/usr/bin/python3.11', '-m', 'venv', '--clear', layout.venv]);
  assert.equal(pip.command, layout.python);
  assert.ok(pip.args.includes('--no-index') && pip.args.includes('--only-binary'));
  assert.deepEqual(pip.args.slice(-3), ['--find-links', '/ext/wheelhouse', 'citeline']);
});

test('PATH lookups and failure lines', () => {
  const root = tempTree(['a/other', 'b/citeline']);
  const exists = (p: string) => fs.existsSync(p);
  assert.equal(onPath('citeline', `${root}/a:${root}/b`, exists, ':'), `${root}/b/citeline`);
  assert.equal(onPath('citeline', `${root}/a`, exists, ':'), undefined);
  assert.equal(onPath('citeline', undefined, exists, ':'), undefined);
  const pip = 'Looking in links: /x\nProcessing ./citeline.whl\nERROR: Could not find a version that satisfies the requirement numpy\nERROR: No matching distribution found for numpy\n';
  assert.equal(failureLine(pip), 'ERROR: No matching distribution found for numpy');
  assert.equal(failureLine('one\ntwo\n'), 'two');
  assert.equal(failureLine(''), 'no output');
});

test('a stopped folder is told once per message, with the fix for a model or an index', () => {
  const folder = (uri: string, state: FolderStatus['state'], message?: string): FolderStatus =>
    ({ uri, state, message, docs: uri.replace('file://', ''), files: 0, chunks: 0, pending: 0, errors: [] }) as FolderStatus;
  const told = new Set<string>();
  const first = stoppedFolderNotices(
    [
      folder('file:///home/u/notes', 'error', 'embedding model /m/e5.gguf is missing'),
      folder('file:///home/u/wiki', 'error', 'the index at /home/u/wiki/.citeline is damaged and could not be rebuilt'),
      folder('file:///home/u/ok', 'ready'),
    ],
    told,
  );
  assert.deepEqual(
    first.map((n) => [n.text, n.fix]),
    [
      ['Citeline stopped serving notes: embedding model /m/e5.gguf is missing', 'Open Settings'],
      ['Citeline stopped serving wiki: the index at /home/u/wiki/.citeline is damaged and could not be rebuilt', 'Reindex'],
    ],
  );
  // The next status with the same errors tells nothing; a new message is told.
  assert.deepEqual(stoppedFolderNotices([folder('file:///home/u/notes', 'error', 'embedding model /m/e5.gguf is missing')], told), []);
  assert.equal(stoppedFolderNotices([folder('file:///home/u/notes', 'error', 'another problem')], told).length, 1);
});

test("the Python extension's interpreter: the active environment, else the execution command", () => {
  const present = new Set(['/envs/a/bin/python', '/usr/bin/python3.12']);
  const exists = (p: string): boolean => present.has(p);
  const isDir = (p: string): boolean => p === '/envs/a';
  assert.equal(interpreterOf({ environments: { getActiveEnvironmentPath: () => ({ id: 'a', path: '/envs/a/bin/python' }) } }, undefined, exists), '/envs/a/bin/python');
  // An environment folder (as conda environments are reported): its bin/python.
  assert.equal(interpreterOf({ environments: { getActiveEnvironmentPath: () => ({ id: 'a', path: '/envs/a' }) } }, undefined, exists, isDir, 'linux'), '/envs/a/bin/python');
  // The older API, or an active path that does not exist.
  const older = { settings: { getExecutionDetails: () => ({ execCommand: ['/usr/bin/python3.12'] }) } };
  assert.equal(interpreterOf(older, undefined, exists), '/usr/bin/python3.12');
  assert.equal(interpreterOf({ ...older, environments: { getActiveEnvironmentPath: () => ({ path: '/gone/python' }) } }, undefined, exists), '/usr/bin/python3.12');
  // A bare name ("python", the default before one is selected) is not an interpreter to probe.
  assert.equal(interpreterOf({ environments: { getActiveEnvironmentPath: () => ({ id: 'p', path: 'python' }) } }, undefined, () => true), undefined);
  assert.equal(interpreterOf(undefined, undefined, exists), undefined);
  assert.equal(interpreterOf({ settings: { getExecutionDetails: () => ({ execCommand: undefined }) } }, undefined, exists), undefined);
  // The resource asked about is the one given.
  let asked: unknown;
  interpreterOf({ environments: { getActiveEnvironmentPath: (r) => ((asked = r), { path: '/envs/a/bin/python' }) } }, 'file:///ws', exists);
  assert.equal(asked, 'file:///ws');
});
