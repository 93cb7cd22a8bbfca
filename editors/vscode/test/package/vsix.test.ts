// The packaged extension: one esbuild bundle and a handful of files in the .vsix.
// Needs `npm run bundle` first (npm test and scripts/vscode-test.sh run it).

import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { builtinModules } from 'node:module';
import * as path from 'node:path';
import { describe, it } from 'node:test';

// out/test/package → editors/vscode
const EXT = path.resolve(__dirname, '..', '..', '..');
const BUNDLE = path.join(EXT, 'out', 'extension.js');

describe('the .vsix', () => {
  it('lists only the bundle, the manifest, the README and the icons', () => {
    const out = execFileSync(path.join(EXT, 'node_modules', '.bin', 'vsce'), ['ls', '--no-dependencies'], {
      cwd: EXT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const files = out.split('\n').map((l) => l.trim()).filter((l) => l !== '').sort();
    assert.deepEqual(files, ['README.md', 'media/slipway-icon.woff', 'media/slipway.svg', 'out/extension.js', 'package.json']);
  });

  it('bundles everything but vscode and node built-ins into out/extension.js', () => {
    const text = fs.readFileSync(BUNDLE, 'utf8');
    const required = new Set([...text.matchAll(/\brequire\(["']([^"']+)["']\)/g)].map((m) => m[1]));
    const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
    const foreign = [...required].filter((m) => m !== 'vscode' && !builtins.has(m));
    assert.deepEqual(foreign, [], `the bundle still requires ${foreign.join(', ')}`);
    assert.ok(required.has('vscode'), 'the bundle does not use vscode at all?');
    assert.ok(text.includes('vscode-languageclient') || text.includes('LanguageClient'), 'vscode-languageclient is not inlined');
  });

  it('loads with a stub vscode module and exports activate and deactivate', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Module = require('node:module') as { _load: (request: string, ...rest: unknown[]) => unknown };
    const load = Module._load;
    // Every name of the stub is a class: the language client extends some at load time.
    const stub = new Proxy({}, { get: () => class Stub { readonly stub = true; } });
    Module._load = (request: string, ...rest: unknown[]) => (request === 'vscode' ? stub : load(request, ...rest));
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const ext = require(BUNDLE) as { activate?: unknown; deactivate?: unknown };
      assert.equal(typeof ext.activate, 'function');
      assert.equal(typeof ext.deactivate, 'function');
    } finally {
      Module._load = load;
    }
  });
});
