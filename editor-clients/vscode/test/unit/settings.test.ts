import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';

import {
  RESTART_KEYS,
  SERVER_SETTINGS,
  buildServerSettings,
  expandPath,
  formatCommand,
  needsRestart,
  resolveServerCommand,
  withDebugpy,
} from '../../src/settings';

const none = (): undefined => undefined;

test('nothing set: nothing sent (citeline.toml and the server defaults apply)', () => {
  assert.deepEqual(buildServerSettings(none), { settings: {}, problems: [] });
});

test('set values map to the contract\'s nested camelCase keys', () => {
  const values: Record<string, unknown> = {
    'search.topK': 8,
    'retrieval.mode': 'dense',
    'answer.minKeywordScore': 0.5,
    'answer.minScore': 0.25,
    'answer.maxEvidence': 3,
    'answer.maxAnswerTokens': 128,
    'answer.timeoutSeconds': 30,
    'answer.mode': 'extractive',
    'generation.model': '/models/qwen.gguf',
    'generation.contextSize': 4096,
    'embedding.model': '~/models/bge.gguf',
    'embedding.preset': 'bge',
    'chunking.maxCost': 800,
    'chunking.overlapCost': 100,
    'records.asks': false,
    folders: ['/home/me/notes', 'docs', '~/papers'],
  };
  const { settings, problems } = buildServerSettings((k) => values[k], { baseDir: '/work/ws', home: '/home/me' });
  assert.deepEqual(problems, []);
  assert.deepEqual(settings, {
    folders: ['/home/me/notes', '/work/ws/docs', '/home/me/papers'],
    embedding: { model: '/home/me/models/bge.gguf', preset: 'bge' },
    generation: { model: '/models/qwen.gguf', contextSize: 4096 },
    chunking: { maxCost: 800, overlapCost: 100 },
    search: { topK: 8 },
    retrieval: { mode: 'dense' },
    answer: { minScore: 0.25, minKeywordScore: 0.5, maxEvidence: 3, maxAnswerTokens: 128, timeoutSeconds: 30, mode: 'extractive' },
    records: { asks: false },
  });
});

test('empty strings and lists mean "not set"; wrong types are reported and left out', () => {
  const values: Record<string, unknown> = {
    'generation.model': '  ',
    folders: [],
    'search.topK': 'five',
    'answer.maxEvidence': 2.5,
    'records.asks': 'yes',
    'answer.minScore': 0.4,
  };
  const { settings, problems } = buildServerSettings((k) => values[k]);
  assert.deepEqual(settings, { answer: { minScore: 0.4 } });
  assert.equal(problems.length, 3);
  assert.match(problems.join('\n'), /citeline\.search\.topK must be a integer/);
  assert.match(problems.join('\n'), /citeline\.records\.asks must be a boolean/);
});

test('every server setting is contributed in package.json, with the same type', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
  const props = pkg.contributes.configuration.properties as Record<string, { type: string | string[] }>;
  for (const spec of SERVER_SETTINGS) {
    const p = props[`citeline.${spec.key}`];
    assert.ok(p, `citeline.${spec.key} missing from package.json`);
    const expected = spec.kind === 'string[]' ? 'array' : spec.kind;
    // A setting whose server default depends on other settings is "not set" (null) by default.
    const types = Array.isArray(p.type) ? p.type.filter((t) => t !== 'null') : [p.type];
    assert.deepEqual(types, [expected], `citeline.${spec.key}`);
  }
  for (const k of ['server.command', 'server.python']) {
    assert.ok(props[`citeline.${k}`]);
  }
});

test('answer.mode: auto, extractive or generative, default auto; applies without a restart', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
  const mode = pkg.contributes.configuration.properties['citeline.answer.mode'];
  assert.deepEqual(mode.enum, ['auto', 'extractive', 'generative']);
  assert.equal(mode.default, 'auto');
  assert.equal(mode.enumDescriptions.length, 3);
  assert.equal(needsRestart((key) => key === 'citeline.answer.mode'), false);
  assert.deepEqual(buildServerSettings((k) => (k === 'answer.mode' ? 'generative' : undefined)).settings, { answer: { mode: 'generative' } });
});

test('restart: only the server command; the server applies its own settings live', () => {
  const affects = (changed: string[]) => (key: string) => changed.includes(key);
  assert.equal(needsRestart(affects(['citeline.server.command'])), true);
  assert.equal(needsRestart(affects(['citeline.server.python'])), true);
  assert.equal(needsRestart(affects(['citeline.generation.model'])), false);
  assert.equal(needsRestart(affects(['citeline.embedding.model', 'citeline.chunking.maxCost'])), false);
  assert.equal(needsRestart(affects(['citeline.folders'])), false);
  assert.equal(needsRestart(affects(['citeline.search.topK'])), false);
  assert.equal(needsRestart(affects(['citeline.answer.minScore', 'citeline.hover.mode'])), false);
  assert.deepEqual(RESTART_KEYS, ['server.command', 'server.python']);
});

test('expandPath: ~, ${workspaceFolder}, relative', () => {
  assert.equal(expandPath('~/m.gguf', { home: '/h' }), '/h/m.gguf');
  assert.equal(expandPath('${workspaceFolder}/m.gguf', { workspaceFolder: '/ws' }), '/ws/m.gguf');
  assert.equal(expandPath('m.gguf', { baseDir: '/ws' }), '/ws/m.gguf');
  assert.equal(expandPath('/abs/m.gguf', { baseDir: '/ws' }), '/abs/m.gguf');
});

test('server command: explicit command wins', () => {
  const cmd = resolveServerCommand({
    command: ['${workspaceFolder}/.venv/bin/citeline', 'serve', '--docs', '${workspaceFolder}/samples'],
    python: '/usr/bin/python3',
    workspaceFolders: ['/ws'],
    exists: () => true,
    platform: 'linux',
  });
  assert.deepEqual(cmd, { command: '/ws/.venv/bin/citeline', args: ['serve', '--docs', '/ws/samples'], source: 'citeline.server.command' });
  const bare = resolveServerCommand({ command: ['citeline', 'serve'], workspaceFolders: [], exists: () => false, platform: 'linux' });
  assert.deepEqual(bare, { command: 'citeline', args: ['serve'], source: 'citeline.server.command' });
});

test('server command: python setting, then the workspace .venv with citeline, then PATH', () => {
  assert.deepEqual(resolveServerCommand({ command: [], python: '/opt/py/bin/python', workspaceFolders: ['/ws'], exists: () => true, platform: 'linux' }), {
    command: '/opt/py/bin/python',
    args: ['-m', 'citeline.cli', 'serve'],
    source: 'citeline.server.python',
  });
  const venv = new Set(['/ws2/.venv/bin/python', '/ws2/.venv/bin/citeline', '/ws1/.venv/bin/python']);
  assert.deepEqual(resolveServerCommand({ command: [], python: '', workspaceFolders: ['/ws1', '/ws2'], exists: (p) => venv.has(p), platform: 'linux' }), {
    command: '/ws2/.venv/bin/python',
    args: ['-m', 'citeline.cli', 'serve'],
    source: 'workspace .venv',
  });
  // the repository's .venv above a workspace folder inside it
  const repo = new Set(['/repo/.venv/bin/python', '/repo/.venv/bin/citeline']);
  assert.deepEqual(resolveServerCommand({ command: [], workspaceFolders: ['/repo/samples/zh'], exists: (p) => repo.has(p), platform: 'linux' }).command, '/repo/.venv/bin/python');
  assert.deepEqual(resolveServerCommand({ command: [], python: '', workspaceFolders: ['/ws1'], exists: (p) => venv.has(p), platform: 'linux' }), {
    command: 'citeline',
    args: ['serve'],
    source: 'PATH',
  });
});

test('debugpy: wraps the python form and a venv citeline script; explains when it cannot', () => {
  const py = { command: '/ws/.venv/bin/python', args: ['-m', 'citeline.cli', 'serve'], source: 'workspace .venv' as const };
  assert.deepEqual(withDebugpy(py, {}, () => true).cmd, py);
  assert.deepEqual(withDebugpy(py, { port: '5678' }, () => true, 'linux').cmd.args, ['-Xfrozen_modules=off', '-m', 'debugpy', '--connect', '127.0.0.1:5678', '-m', 'citeline.cli', 'serve']);
  assert.deepEqual(withDebugpy(py, { port: 'localhost:9000', mode: 'listen' }, () => true, 'linux').cmd.args, [
    '-Xfrozen_modules=off', '-m', 'debugpy', '--listen', 'localhost:9000', '--wait-for-client', '-m', 'citeline.cli', 'serve',
  ]);
  const script = { command: '/ws/.venv/bin/citeline', args: ['serve'], source: 'citeline.server.command' as const };
  assert.deepEqual(withDebugpy(script, { port: '5678' }, (p) => p === '/ws/.venv/bin/python', 'linux').cmd, {
    command: '/ws/.venv/bin/python',
    args: ['-Xfrozen_modules=off', '-m', 'debugpy', '--connect', '127.0.0.1:5678', '-m', 'citeline.cli', 'serve'],
    source: 'citeline.server.command',
  });
  const onPath = withDebugpy({ command: 'citeline', args: ['serve'], source: 'PATH' }, { port: '5678' }, () => false, 'linux');
  assert.deepEqual(onPath.cmd, { command: 'citeline', args: ['serve'], source: 'PATH' });
  assert.match(onPath.problem ?? '', /cannot run "citeline" under debugpy/);
  assert.match(withDebugpy(py, { port: 'abc' }, () => true).problem ?? '', /not a port/);
});

test('formatCommand quotes what needs quoting', () => {
  assert.equal(formatCommand({ command: '/a b/python', args: ['-m', 'citeline.cli', 'serve'], source: 'PATH' }), '"/a b/python" -m citeline.cli serve');
});
