// Issue 43.2: package.json's `engines` states exactly the Node versions every installed dependency accepts (the
// README's `npm ci && npm test` needs the dev ones too). It said >=20.18.1, which admits Node versions vite 7
// (^20.19.0 || >=22.12.0), vitest 4 (no 21, no 23), redocly and better-sqlite3 (up to 26.x) refuse.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
// npm's own range arithmetic (a dependency of the toolchain, read as npm reads engines).
const semver = require('semver') as { subset(sub: string, dom: string): boolean; satisfies(v: string, r: string): boolean };

/** Every installed package's engines.node, by package name (nested node_modules included). */
function enginesOfInstalled(): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (name.startsWith('.')) continue;
      const path = join(dir, name);
      if (name.startsWith('@')) {
        walk(path);
        continue;
      }
      const manifest = join(path, 'package.json');
      if (existsSync(manifest)) {
        const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; engines?: { node?: string } };
        if (pkg.name && pkg.engines?.node) out.set(`${pkg.name} (${path})`, pkg.engines.node);
      }
      if (existsSync(join(path, 'node_modules'))) walk(join(path, 'node_modules'));
    }
  };
  walk('node_modules');
  return out;
}

describe('engines', () => {
  const ours = (JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } }).engines.node;

  it('admits only Node versions every installed dependency accepts', () => {
    const engines = enginesOfInstalled();
    expect(engines.size).toBeGreaterThan(50);
    const refusing = [...engines].filter(([, theirs]) => !semver.subset(ours, theirs)).map(([name, theirs]) => `${name}: ${theirs}`);
    expect(refusing).toEqual([]);
  });

  it('still admits Node 20 (the machines here), and this Node', () => {
    expect(semver.satisfies('20.19.0', ours)).toBe(true);
    expect(semver.satisfies(process.version, ours)).toBe(true);
  });
});

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    return e.isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('what a production install carries', () => {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { license: string; dependencies: Record<string, string>; devDependencies: Record<string, string> };

  it('@grafana/faro-core (types only: ~27 MB of OpenTelemetry) is a devDependency, and src imports only its types', () => {
    expect(pkg.dependencies['@grafana/faro-core']).toBeUndefined();
    expect(pkg.devDependencies['@grafana/faro-core']).toBe('2.12.1');
    const lines = sourceFiles('src').flatMap((f) => readFileSync(f, 'utf8').split('\n').filter((l) => /from '@grafana\/faro-core'/.test(l)).map((l) => `${f}: ${l}`));
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.filter((l) => !/: import type \{/.test(l))).toEqual([]);
  });

  it('a LICENSE file holds the Apache License 2.0 that package.json names', () => {
    expect(pkg.license).toBe('Apache-2.0');
    const text = readFileSync('LICENSE', 'utf8');
    expect(text).toMatch(/^\s*Apache License\s+Version 2\.0, January 2004/);
    expect(text).toContain('TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION');
  });
});
