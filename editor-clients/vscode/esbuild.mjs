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

/** The PDF viewer's webview script (browser, ES module); pdf.js itself is loaded at run time from dist/pdfjs/. */
const viewerOptions = {
  entryPoints: ['webview/pdfViewer.ts'],
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  outfile: 'dist/webview/pdfViewer.js',
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'info',
};

/** pdf.js (pdfjs-dist, Apache-2.0), as published: its module and its worker, with its license. */
function copyPdfjs() {
  const from = path.join('node_modules', 'pdfjs-dist');
  const to = path.join('dist', 'pdfjs');
  fs.mkdirSync(to, { recursive: true });
  for (const f of ['build/pdf.min.mjs', 'build/pdf.worker.min.mjs', 'LICENSE']) {
    fs.copyFileSync(path.join(from, f), path.join(to, path.basename(f)));
  }
  const version = JSON.parse(fs.readFileSync(path.join(from, 'package.json'), 'utf8')).version;
  fs.writeFileSync(path.join(to, 'VERSION'), `pdfjs-dist ${version}\n`);
}

if (watch) {
  copyPdfjs();
  const ctx = await esbuild.context(options);
  const viewer = await esbuild.context(viewerOptions);
  await Promise.all([ctx.watch(), viewer.watch()]);
} else {
  const result = await esbuild.build(options);
  writeNotices(result.metafile);
  await esbuild.build(viewerOptions);
  copyPdfjs();
}
