// Builds the studio's third-party browser code into
// src/quire/ui/static/vendor/ (run through `make vendor`, after
// `npm ci`). It writes nothing else. The output depends only on the
// lockfile and the sources here: no dates, and every list sorted, so two
// runs (or a fresh clone) give byte-identical files.
import { readFileSync, writeFileSync, readdirSync, mkdirSync, rmSync, existsSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const modules = join(here, 'node_modules');
const out = join(here, '..', 'src', 'quire', 'ui', 'static', 'vendor');

const files = new Map(); // output name -> contents (string or Buffer)

function pkgJson(dir) {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
}

function version(name) {
  return pkgJson(join(modules, name)).version;
}

const LICENCE_FILE = /^(licen[cs]e|copying|notice)([.-].*)?$/i;

// The licence texts a package ships, in a stable order. The @tiptap
// packages, GraphiQL's plugins (@graphiql/plugin-*), react-compiler-runtime,
// react-remove-scroll-bar and toggle-selection ship none on npm: their
// licence (MIT) is kept in licenses/, copied from the project's repository.
function licenceTexts(dir, name) {
  const found = readdirSync(dir).filter((f) => LICENCE_FILE.test(f)).sort();
  if (found.length > 0) return found.map((f) => readFileSync(join(dir, f), 'utf8').trim());
  const scope = name.startsWith('@') ? name.split('/')[0] : name;
  const kept = join(here, 'licenses', `${scope}.LICENSE.md`);
  if (existsSync(kept)) return [readFileSync(kept, 'utf8').trim()];
  throw new Error(`${name} ships no licence file and licenses/ has none for it: add one before vendoring it`);
}

// The package that holds a bundled input file: the part of its path after
// the last node_modules/ (a scoped name has two parts).
function packageDir(input) {
  const parts = input.split('/');
  const at = parts.lastIndexOf('node_modules');
  if (at < 0) return null;
  const size = parts[at + 1].startsWith('@') ? 2 : 1;
  return join(here, ...parts.slice(0, at + 1 + size));
}

function copyFrom(pkg, from, to) {
  files.set(to, readFileSync(join(modules, pkg, from)));
}

// htmx and Sortable ship browser builds: copied as they are.
copyFrom('htmx.org', 'dist/htmx.min.js', 'htmx.min.js');
copyFrom('htmx.org', 'LICENSE', 'htmx.LICENSE');
copyFrom('sortablejs', 'Sortable.min.js', 'sortable.min.js');
copyFrom('sortablejs', 'LICENSE', 'sortable.LICENSE');
// json-logic-js: the conditions of conditional fields, evaluated in the editor
copyFrom('json-logic-js', 'logic.js', 'jsonlogic.js');
copyFrom('json-logic-js', 'LICENSE', 'jsonlogic.LICENSE');

const rule = '='.repeat(72);

// Bundles `entry` into `<base>.js` (and `<base>.css` when it imports
// styles), with `<base>.LICENSES.txt`: the licence of every package in it.
// Answers the packages bundled.
async function bundle(entry, base, what) {
  const result = await esbuild.build({
    absWorkingDir: here,
    entryPoints: [entry],
    outdir: 'dist',
    bundle: true,
    format: 'iife',
    target: 'es2020',
    minify: true,
    sourcemap: false,
    legalComments: 'external',
    metafile: true,
    write: false,
    logLevel: 'warning',
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  let legal = '';
  for (const file of result.outputFiles) {
    if (file.path.endsWith('.LEGAL.txt')) legal = file.text.trim();
    else if (file.path.endsWith('.js')) files.set(`${base}.js`, file.text);
    // fonts embedded as data: URLs are refused by the studio's CSP
    // (font-src falls back to 'self'): system fonts are used instead
    else if (file.path.endsWith('.css')) files.set(`${base}.css`, file.text.replace(/@font-face\{[^}]*\}/g, ''));
  }
  if (!files.has(`${base}.js`)) throw new Error(`esbuild wrote no ${base}.js`);
  for (const banned of ['eval(', 'new Function']) {
    if (files.get(`${base}.js`).includes(banned)) {
      throw new Error(`${base}.js contains "${banned}": the studio's CSP (script-src 'self') forbids it`);
    }
  }
  const bundled = new Map(); // package dir -> package.json
  for (const input of Object.keys(result.metafile.inputs)) {
    const dir = packageDir(input);
    if (dir && !bundled.has(dir)) bundled.set(dir, pkgJson(dir));
  }
  const packages = [...bundled.entries()]
    .map(([dir, pkg]) => ({ dir, name: pkg.name, version: pkg.version, license: pkg.license || 'see text' }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.version < b.version ? -1 : 1));
  const sections = packages.map((p) => {
    const where = relative(here, p.dir).split(sep).join('/');
    return [rule, `${p.name}@${p.version} (${p.license}), from ${where}`, rule, '', ...licenceTexts(p.dir, p.name)].join('\n');
  });
  if (legal) {
    sections.push([rule, 'Licence comments kept from the bundled sources', rule, '', legal].join('\n'));
  }
  files.set(`${base}.LICENSES.txt`, [
    `Licences of the packages bundled into ${base}.js${what}, one section per package.`,
    'Generated by `make vendor` (vendor/build.mjs); do not edit.',
    '',
    sections.join('\n\n'),
    '',
  ].join('\n'));
  return packages;
}

// TipTap and CodeMirror only ship ES modules with bare imports: bundled.
const packages = await bundle('src/editors.js', 'editors', '');
// GraphiQL (React) for the GraphQL playground: bundled with its styles.
const graphiqlPackages = await bundle('src/graphiql.js', 'graphiql', ' and graphiql.css');

files.set('editors.css', readFileSync(join(here, 'src', 'editors.css')));

const rows = packages.map((p) => `| ${p.name} | ${p.version} | ${p.license} |`);
const graphiqlRows = graphiqlPackages.map((p) => `| ${p.name} | ${p.version} | ${p.license} |`);
files.set('README.md', `# Vendored browser code

Third-party code the studio loads in the browser, committed so that the
server needs no Node.js. Generated by \`make vendor\` from \`vendor/\` in the
repository (\`vendor/package.json\`, \`vendor/package-lock.json\`,
\`vendor/src/\`, \`vendor/build.mjs\`); do not edit these files by hand,
regenerate with \`make vendor\`.

| File | What it is | Comes from |
|---|---|---|
| htmx.min.js | htmx, partial page updates | htmx.org ${version('htmx.org')}, \`dist/htmx.min.js\` |
| htmx.LICENSE | htmx's licence | htmx.org ${version('htmx.org')} |
| sortable.min.js | Sortable, drag-and-drop reordering (fields, repeater rows, tree nodes) | sortablejs ${version('sortablejs')}, \`Sortable.min.js\` |
| sortable.LICENSE | Sortable's licence | sortablejs ${version('sortablejs')} |
| jsonlogic.js | json-logic-js, \`window.jsonLogic\`: the conditions of conditional fields, in the editor | json-logic-js ${version('json-logic-js')}, \`logic.js\` |
| jsonlogic.LICENSE | json-logic-js's licence | json-logic-js ${version('json-logic-js')} |
| editors.js | \`window.QuireEditors\`: rich text (TipTap on ProseMirror) and code (CodeMirror 6), one minified bundle | \`vendor/src/editors.js\` bundled by esbuild ${version('esbuild')}: @tiptap/core ${version('@tiptap/core')}, @tiptap/starter-kit ${version('@tiptap/starter-kit')}, @tiptap/extension-link ${version('@tiptap/extension-link')}, codemirror ${version('codemirror')} and the packages below |
| editors.css | the editors' styles (classes \`qe-*\`) | \`vendor/src/editors.css\` |
| editors.LICENSES.txt | the licence of every package bundled into editors.js | their packages |
| graphiql.js, graphiql.css | \`window.QuireGraphiQL\`: GraphiQL, the GraphQL playground (React), one minified bundle and its styles | \`vendor/src/graphiql.js\` bundled by esbuild: graphiql ${version('graphiql')}, react ${version('react')}, react-dom ${version('react-dom')}, graphql ${version('graphql')} and the packages below |
| graphiql.LICENSES.txt | the licence of every package bundled into graphiql.js | their packages |

Packages bundled into editors.js:

| Package | Version | Licence |
|---|---|---|
${rows.join('\n')}

Packages bundled into graphiql.js:

| Package | Version | Licence |
|---|---|---|
${graphiqlRows.join('\n')}
`);

// Write the set, and drop any file a former build made that this one no
// longer does, so the folder holds exactly what the lockfile builds.
mkdirSync(out, { recursive: true });
for (const name of readdirSync(out)) {
  if (!files.has(name)) rmSync(join(out, name), { recursive: true });
}
for (const name of [...files.keys()].sort()) {
  writeFileSync(join(out, name), files.get(name));
}
console.log(`vendor: wrote ${files.size} files to ${relative(process.cwd(), out) || '.'}`);
