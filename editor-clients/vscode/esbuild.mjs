// Bundles the extension (and vscode-languageclient) into dist/extension.js.
//   node esbuild.mjs [--production] [--watch]
import * as fs from 'node:fs';
import * as path from 'node:path';

import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

const options = {
  entryPoints: ['src/extension.ts'],
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  outfile: 'dist/extension.js',
  external: ['vscode'],
  sourcemap: production ? false : 'linked',
  minify: production,
  legalComments: 'linked',
  metafile: true,
  logLevel: 'info',
};

/** dist/THIRD_PARTY_NOTICES.txt: the license of every npm package in the bundle. */
function writeNotices(metafile) {
  const dirs = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m) dirs.add(m[1]);
  }
  const parts = [];
  for (const dir of [...dirs].sort()) {
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const file = fs.readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    const text = file ? fs.readFileSync(path.join(dir, file), 'utf8').trim() : `License: ${pkg.license ?? 'unknown'}`;
    parts.push(`${pkg.name} ${pkg.version} (${pkg.license ?? 'see below'})\n${'-'.repeat(60)}\n${text}\n`);
  }
  fs.writeFileSync(
    'dist/THIRD_PARTY_NOTICES.txt',
    `dist/extension.js bundles the following npm packages.\n\n${parts.join('\n')}`,
  );
}

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  const result = await esbuild.build(options);
  writeNotices(result.metafile);
}
