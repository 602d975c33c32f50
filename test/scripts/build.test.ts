// Issue 43.2: `npm run build` makes a dist/ the CLI can run. The old build compiled TypeScript only: dist/ had no
// sql/, so a compiled `migrate` retried ENOENT as a store error for 31 s and ended "ClickHouse … is unreachable";
// and a dist/ older than the sources ran in their place, silently. Here the real build (scripts/build.mjs, what
// `npm run build` runs) into a temporary directory, then the compiled CLI's `migrate` on the embedded store; and
// bin/tallyhouse.js's refusal of a stale dist/, on a checkout-shaped directory with a stand-in compiled entry.
import { execFile, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { CONSOLE_FILES } from '../../src/console/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function node(args: string[], cwd: string, env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, args, { cwd, env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), ...env }, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('npm run build', () => {
  it('package.json builds through scripts/build.mjs', () => {
    expect(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.build).toBe('node scripts/build.mjs');
  });

  it('writes dist/ with sql/ and the demo scenario, and the compiled CLI migrates the embedded store', async () => {
    const app = mkdtempSync(join(tmpdir(), 'th-build-'));
    await promisify(execFile)(process.execPath, [join(ROOT, 'scripts/build.mjs'), '--outDir', join(app, 'dist')], { cwd: ROOT });
    expect(readdirSync(join(app, 'dist/sql')).sort()).toEqual(readdirSync(join(ROOT, 'sql')).sort());
    expect(readdirSync(join(app, 'dist/src/sim/scenarios'))).toContain('demo.json');
    // The web console's files, where the compiled src/console/index.ts reads them (it refuses to start without).
    for (const file of CONSOLE_FILES) expect(existsSync(join(app, 'dist/console', file)), file).toBe(true);
    cpSync(join(ROOT, 'bin'), join(app, 'bin'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(app, 'package.json'));
    symlinkSync(join(ROOT, 'node_modules'), join(app, 'node_modules'), 'dir');
    const r = await promisify(execFile)(process.execPath, ['bin/tallyhouse.js', 'migrate'], {
      cwd: app,
      env: { PATH: process.env.PATH, HOME: tmpdir(), NODE_ENV: 'test', LOG_LEVEL: 'warn', DATA_DIR: join(app, 'data') },
    }).catch((e: { code: number; stderr: string }) => ({ stdout: '', stderr: `exit ${e.code}: ${e.stderr}` }));
    expect(r.stderr).not.toMatch(/exit|unreachable|ENOENT/);
    // A second migrate finds every migration applied (each file's name printed or none pending).
    const again = node(['bin/tallyhouse.js', 'migrate'], app, { NODE_ENV: 'test', LOG_LEVEL: 'warn', DATA_DIR: join(app, 'data') });
    expect(again.code, again.stderr).toBe(0);
  });
});

describe('bin/tallyhouse.js and a stale dist/', () => {
  /** A checkout's shape: src/main.ts, bin/, and a dist/ whose entry prints "compiled". */
  function checkout(): string {
    const dir = mkdtempSync(join(tmpdir(), 'th-stale-'));
    cpSync(join(ROOT, 'bin'), join(dir, 'bin'), { recursive: true });
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src/main.ts'), '// the sources\n');
    mkdirSync(join(dir, 'dist/src'), { recursive: true });
    writeFileSync(join(dir, 'dist/src/main.js'), "export async function run() { process.stdout.write('compiled\\n'); }\n");
    return dir;
  }
  const builtAt = new Date('2026-11-01T00:00:00Z');

  it('runs dist/ built from the sources as they are', () => {
    const dir = checkout();
    utimesSync(join(dir, 'src/main.ts'), builtAt, builtAt);
    writeFileSync(join(dir, 'dist/BUILT_FROM'), `${builtAt.getTime()}\n`);
    expect(node(['bin/tallyhouse.js', 'help'], dir)).toEqual({ code: 0, stdout: 'compiled\n', stderr: '' });
  });

  it('refuses, in one line, a dist/ older than an edit to src/', () => {
    const dir = checkout();
    const edited = new Date(builtAt.getTime() + 60_000);
    utimesSync(join(dir, 'src/main.ts'), edited, edited);
    writeFileSync(join(dir, 'dist/BUILT_FROM'), `${builtAt.getTime()}\n`);
    expect(node(['bin/tallyhouse.js', 'help'], dir)).toEqual({
      code: 1,
      stdout: '',
      stderr: "tallyhouse: dist/ is older than src/, jobs/ or sql/: run 'npm run build' again, or delete dist/ to run the sources\n",
    });
  });

  it('refuses a dist/ not built by npm run build (no BUILT_FROM)', () => {
    const r = node(['bin/tallyhouse.js', 'help'], checkout());
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^tallyhouse: dist\/ was not built by 'npm run build' \(no dist\/BUILT_FROM\) and may be stale: .*\n$/);
  });
});

// Issue 43 (the image without dev tools): tsx is a devDependency, so a production install (`npm ci --omit=dev`) has
// none; without a dist/ the CLI said "Cannot find package 'tsx'" with a stack. Now one line saying what to do.
describe('a production install without dist/', () => {
  it('says in one line to build, and exits 1', () => {
    const app = mkdtempSync(join(tmpdir(), 'th-nodist-'));
    cpSync(join(ROOT, 'bin'), join(app, 'bin'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(app, 'package.json'));
    mkdirSync(join(app, 'node_modules'));
    const r = node(['bin/tallyhouse.js', 'help'], app);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'tallyhouse: no dist/ build here and no tsx to run the sources (a production install, npm ci --omit=dev): run `npm ci && npm run build` first, or use the image\n',
    );
  });
});
