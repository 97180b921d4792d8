// Builds the demo into speech_to_speech/demo_static/ (package data: `serve` and a pip-installed
// server both serve it at /demo). The output is committed; `make demo` rebuilds it.
//
//   node build.mjs                 write speech_to_speech/demo_static/
//   node build.mjs --outdir DIR    write DIR instead (tests compare it with the committed bundle)
//
// Besides the page, the script and the stylesheet it writes:
//   licenses.txt     the license texts of the npm packages inside demo.js
//   build-info.json  sha256 of every source file and every output, so a fast test can tell a
//                    bundle that is stale (or edited by hand) from the sources without npm
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import * as esbuild from 'esbuild';

const demoDir = path.dirname(fileURLToPath(import.meta.url));
const repoDir = path.dirname(demoDir);
const outIndex = process.argv.indexOf('--outdir');
const outDir = outIndex > 0
  ? path.resolve(process.argv[outIndex + 1])
  : path.join(repoDir, 'speech_to_speech', 'demo_static');

const sha256 = (data) => createHash('sha256').update(data).digest('hex');
const posix = (file) => file.split(path.sep).join('/');

/** The sources: every file under demo/ but node_modules/, livekit/ (another project), dotfiles and *.md. */
async function sourceFiles(dir = demoDir) {
  const found = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    if (dir === demoDir && entry.name === 'livekit') continue;
    if (entry.isDirectory()) found.push(...(await sourceFiles(full)));
    else if (entry.isFile() && !entry.name.endsWith('.md')) found.push(full);
  }
  return found;
}

/** The LICENSE file of every npm package bundled into the script, in name order. */
async function licenses(metafile) {
  const packages = new Map();
  for (const input of Object.keys(metafile.inputs)) {
    const match = /^(.*node_modules\/((?:@[^/]+\/)?[^/]+))\//.exec(posix(input));
    if (match) packages.set(match[2], path.join(demoDir, match[1]));
  }
  const sections = [];
  for (const name of [...packages.keys()].sort()) {
    const dir = packages.get(name);
    const { version, license } = JSON.parse(await readFile(path.join(dir, 'package.json'), 'utf8'));
    const file = (await readdir(dir)).filter((f) => /^(licen[cs]e|copying)/i.test(f)).sort()[0];
    const text = file ? (await readFile(path.join(dir, file), 'utf8')).trim() : `License: ${license}`;
    sections.push(`${name} ${version} (${license})\n\n${text}\n`);
  }
  return `Third-party software bundled into demo.js\n\n${sections.join(`\n${'-'.repeat(72)}\n\n`)}`;
}

const result = await esbuild.build({
  absWorkingDir: demoDir,
  entryPoints: { demo: 'src/main.ts', 'audio-worklet': 'src/audio-worklet.ts' },
  outdir: outDir, // nothing is written here by esbuild (write: false); it names the outputs
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: ['es2022'],
  minify: true,
  legalComments: 'none', // licenses.txt has them all
  charset: 'utf8',
  metafile: true,
  write: false,
  logLevel: 'warning',
});

const outputs = new Map();
for (const file of result.outputFiles) outputs.set(path.basename(file.path), Buffer.from(file.contents));
outputs.set('index.html', await readFile(path.join(demoDir, 'index.html')));
outputs.set('demo.css', await readFile(path.join(demoDir, 'style.css')));
outputs.set('licenses.txt', Buffer.from(await licenses(result.metafile)));

const sources = {};
for (const file of (await sourceFiles()).map((f) => posix(path.relative(repoDir, f))).sort()) {
  sources[file] = sha256(await readFile(path.join(repoDir, file)));
}
const info = {
  note: 'Written by demo/build.mjs (make demo). Do not edit the files here: edit demo/ and rebuild.',
  esbuild: esbuild.version,
  sources,
  outputs: Object.fromEntries(
    [...outputs.keys()].sort().map((name) => [name, sha256(outputs.get(name))]),
  ),
};
outputs.set('build-info.json', Buffer.from(`${JSON.stringify(info, null, 2)}\n`));

await rm(outDir, { recursive: true, force: true });
await mkdir(outDir, { recursive: true });
for (const [name, data] of outputs) await writeFile(path.join(outDir, name), data);
console.log(`demo built into ${path.relative(process.cwd(), outDir) || '.'}: ${[...outputs.keys()].sort().join(', ')}`);
