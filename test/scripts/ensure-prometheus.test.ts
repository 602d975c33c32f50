// Issue 30.1: `npm ci && npm test` passes on a fresh machine: the pretest step (scripts/ensure-prometheus.mjs)
// installs Debian's `prometheus` when promtool or prometheus is missing, stops only the service that installation
// started, and fails with one clear line when it cannot. Run as a process with PATH trimmed to a directory of fakes
// (apt-get, dpkg-query, sudo, service, systemctl that record their arguments), so nothing is installed or stopped
// on this machine; the decision logic's other branches (sudo, no sudo, systemd) through decide().
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decide, type EnsureFacts } from '../../scripts/ensure-prometheus.mjs';

const SCRIPT = resolve('scripts/ensure-prometheus.mjs');

function fake(dir: string, name: string, body: string): void {
  writeFileSync(join(dir, name), `#!/bin/sh\n${body}\n`);
  chmodSync(join(dir, name), 0o755);
}

interface Bed {
  bin: string;
  log: () => string[];
}

/**
 * A directory of fakes: apt-get (its install puts promtool and prometheus into the directory and marks the package
 * installed, unless told to fail), dpkg-query, sudo, service, systemctl; each records `name args` in a log.
 */
function bed(opts: { tools?: boolean; installed?: boolean; aptGet?: boolean; aptFails?: boolean } = {}): Bed {
  const root = mkdtempSync(join(tmpdir(), 'th-ensure-prom-'));
  const bin = join(root, 'bin');
  mkdirSync(bin);
  const log = join(root, 'calls.log');
  const state = join(root, 'installed');
  const record = (name: string) => `echo "${name} $*" >> '${log}'`;
  const tool = (name: string) => `printf '#!/bin/sh\\nexit 0\\n' > '${bin}/${name}'; /bin/chmod 755 '${bin}/${name}'`;
  if (opts.tools) for (const t of ['promtool', 'prometheus']) fake(bin, t, 'exit 0');
  if (opts.installed) writeFileSync(state, '');
  if (opts.aptGet !== false) {
    fake(
      bin,
      'apt-get',
      opts.aptFails
        ? `${record('apt-get')}\nif [ "$1" = install ]; then echo 'E: Unable to locate package prometheus' >&2; exit 100; fi\nexit 0`
        : `${record('apt-get')}\nif [ "$1" = install ]; then ${tool('promtool')}; ${tool('prometheus')}; : > '${state}'; fi\nexit 0`,
    );
  }
  fake(bin, 'dpkg-query', `if [ -f '${state}' ]; then printf 'install ok installed'; else printf 'unknown ok not-installed'; exit 1; fi`);
  fake(bin, 'sudo', `${record('sudo')}\nwhile [ $# -gt 0 ] && [ "\${1#*=}" != "$1" ]; do export "$1"; shift; done\nexec "$@"`);
  fake(bin, 'service', `${record('service')}\nexit 0`);
  fake(bin, 'systemctl', `${record('systemctl')}\nexit 0`);
  return { bin, log: () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []) };
}

/** Runs the script on the bed's PATH; `required` sets TALLYHOUSE_TEST_REQUIRE_TOOLS=1 as .ci/run does. */
function run(b: Bed, required = true) {
  const env: Record<string, string> = { PATH: b.bin, HOME: tmpdir() };
  if (required) env.TALLYHOUSE_TEST_REQUIRE_TOOLS = '1';
  const r = spawnSync(process.execPath, [SCRIPT], { env, encoding: 'utf8' });
  return { code: r.status, stderr: r.stderr };
}

const asRoot = process.getuid?.() === 0;
const systemd = existsSync('/run/systemd/system');
/** The calls a fresh install makes here, root or not, systemd or not. */
function expectedInstallCalls(): string[] {
  const sudo = (cmd: string) => (asRoot ? [cmd] : [`sudo ${cmd}`, cmd]);
  return [
    ...sudo('apt-get update -qq'),
    ...(asRoot ? ['apt-get install -y -qq prometheus'] : ['sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus', 'apt-get install -y -qq prometheus']),
    ...(systemd ? sudo('systemctl stop prometheus') : sudo('service prometheus stop')),
  ];
}

describe('scripts/ensure-prometheus.mjs (npm pretest)', () => {
  it('npm test runs it first', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.pretest).toContain('node scripts/ensure-prometheus.mjs');
  });

  it('does nothing when promtool and prometheus are on PATH', () => {
    const b = bed({ tools: true });
    expect(run(b)).toEqual({ code: 0, stderr: '' });
    expect(b.log()).toEqual([]);
  });

  it('with neither on PATH: installs the package, says so on stderr, stops the service it started; a second run does nothing', () => {
    const b = bed();
    const first = run(b);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toMatch(/^ensure-prometheus: promtool and prometheus not on PATH: installing Debian's prometheus package/);
    expect(b.log()).toEqual(expectedInstallCalls());
    expect(run(b)).toEqual({ code: 0, stderr: '' });
    expect(b.log()).toEqual(expectedInstallCalls());
  });

  it('the package installed but its binaries not on PATH: one line, nothing installed, nothing stopped', () => {
    const b = bed({ installed: true });
    const r = run(b);
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      "ensure-prometheus: Debian's prometheus package is installed, but promtool and prometheus is not on PATH (it installs them in /usr/bin): add /usr/bin to PATH",
    ]);
    expect(b.log()).toEqual([]);
  });

  it('apt-get failing: one line naming the command and its last message; no service stopped', () => {
    const b = bed({ aptFails: true });
    const r = run(b);
    expect(r.code).toBe(1);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2); // what it is doing, then why it stopped
    expect(lines[1]).toMatch(/^ensure-prometheus: '.*apt-get install -y -qq prometheus' failed \(exit 100: E: Unable to locate package prometheus\); install Debian's prometheus package by hand$/);
    expect(b.log().filter((c) => /service|systemctl/.test(c))).toEqual([]);
  });

  it('no apt-get: one line saying what to install', () => {
    const b = bed({ aptGet: false });
    const r = run(b);
    expect(r.code).toBe(1);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      "ensure-prometheus: the tests need promtool and prometheus (Debian's prometheus package) and there is no apt-get here to install it: install Prometheus so that promtool and prometheus are on PATH",
    ]);
  });

  // Issue 43.2: on a machine without apt-get `npm test` exited 1 here and ran no test at all, even a pure one.
  it('no apt-get and the tools not mandatory: exit 0 and one line saying which tests are skipped and how to install them', () => {
    const b = bed({ aptGet: false });
    const r = run(b, false);
    expect(r.code).toBe(0);
    expect(r.stderr.trimEnd().split('\n')).toEqual([
      "ensure-prometheus: no promtool and prometheus and no apt-get to install them; the tests that need promtool and prometheus are skipped: to run them, install Prometheus (Debian: 'apt-get install prometheus') so that promtool and prometheus are on PATH (TALLYHOUSE_TEST_REQUIRE_TOOLS=1, as CI sets, makes them mandatory)",
    ]);
  });

  it('apt-get failing and the tools not mandatory: the install is tried, then one skip line with the reason, exit 0', () => {
    const b = bed({ aptFails: true });
    const r = run(b, false);
    expect(r.code).toBe(0);
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^ensure-prometheus: '.*apt-get install -y -qq prometheus' failed \(exit 100: E: Unable to locate package prometheus\); the tests that need promtool and prometheus are skipped: /);
  });

  // A tool no machine has: promtool itself is on /usr/bin once the pretest step installed it (as in CI).
  it('the tests that need a tool skip only where it is missing and it is not mandatory', () => {
    const b = bed({ aptGet: false });
    const script = `import { skipWithout } from ${JSON.stringify(resolve('test/support/tools.ts'))};
      console.log(JSON.stringify([skipWithout(['tallyhouse-absent-tool'], {}), skipWithout(['tallyhouse-absent-tool'], { TALLYHOUSE_TEST_REQUIRE_TOOLS: '1' }), skipWithout(['sh'], {})]));`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { PATH: `${b.bin}:/bin:/usr/bin`, HOME: tmpdir() }, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual([true, false, false]);
  });

  it('CI makes the tools mandatory (.ci/run exports TALLYHOUSE_TEST_REQUIRE_TOOLS=1 before npm test)', () => {
    expect(readFileSync('.ci/run', 'utf8')).toMatch(/^export TALLYHOUSE_TEST_REQUIRE_TOOLS=1$/m);
  });

  describe('decide()', () => {
    const base: EnsureFacts = { missing: ['promtool'], root: false, sudo: true, aptGet: true, packageInstalled: false, systemd: true, service: true };
    it('not root: apt-get through sudo, the service stopped through systemd where it runs, else service', () => {
      expect(decide(base)).toEqual({
        action: 'install',
        steps: [
          ['sudo', 'apt-get', 'update', '-qq'],
          ['sudo', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '-qq', 'prometheus'],
        ],
        stop: ['sudo', 'systemctl', 'stop', 'prometheus'],
      });
      expect(decide({ ...base, systemd: false })).toMatchObject({ stop: ['sudo', 'service', 'prometheus', 'stop'] });
      expect(decide({ ...base, systemd: false, service: false })).toMatchObject({ stop: null });
    });
    it('root: no sudo', () => {
      expect(decide({ ...base, root: true, sudo: false })).toEqual({
        action: 'install',
        steps: [['apt-get', 'update', '-qq'], ['apt-get', 'install', '-y', '-qq', 'prometheus']],
        stop: ['systemctl', 'stop', 'prometheus'],
      });
    });
    it('neither root nor sudo: one line', () => {
      expect(decide({ ...base, sudo: false })).toEqual({
        action: 'fail',
        why: 'no promtool, and not root and no sudo to install them',
        message: "ensure-prometheus: the tests need promtool: not root and no sudo to install Debian's prometheus package; run 'apt-get install prometheus' as root once",
      });
    });
    it('nothing missing: nothing to do, whatever else is true', () => {
      expect(decide({ ...base, missing: [], packageInstalled: true, aptGet: false })).toEqual({ action: 'none' });
    });
  });
});
