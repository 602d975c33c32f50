#!/usr/bin/env node
// `npm test` runs this first (the pretest script): some suites run `promtool` (metrics lint, alert-rule tests) and
// start a real `prometheus` (scrape tests), both from Debian's `prometheus` package. When either is missing from
// PATH it installs that package (apt-get as root, through sudo otherwise) and says so on stderr; when it cannot,
// it fails with one line saying what to do, unless the tools are optional here (below). The package starts a Prometheus service where an init system runs;
// the tests start their own, so that service is stopped: only when this script installed the package just now
// (then the service is the one the installation started, never a process someone else started).
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const NEEDED = ['promtool', 'prometheus'];
const PREFIX = 'ensure-prometheus:';
/**
 * Set (to 1) where the tests that need promtool or prometheus must run: CI (.ci/run exports it). Unset, a machine
 * that cannot install them still runs every other test, and those tests are reported as skipped
 * (test/support/tools.ts reads the same variable).
 */
export const REQUIRE_TOOLS_ENV = 'TALLYHOUSE_TEST_REQUIRE_TOOLS';

/** True when the environment makes the tools mandatory. */
export function toolsRequired(env = process.env) {
  const v = env[REQUIRE_TOOLS_ENV];
  return v !== undefined && v !== '' && v !== '0';
}

/** The one line `npm test` prints when it goes on without the tools. */
export function skipLine(missing, why) {
  return `${PREFIX} ${why}; the tests that need ${missing.join(' and ')} are skipped: to run them, install Prometheus (Debian: 'apt-get install prometheus') so that promtool and prometheus are on PATH (${REQUIRE_TOOLS_ENV}=1, as CI sets, makes them mandatory)`;
}

/** True when `command` is an executable file in a directory of PATH. */
export function onPath(command, path = process.env.PATH ?? '') {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, command), constants.X_OK);
      return true;
    } catch {
      // not in this directory
    }
  }
  return false;
}

/**
 * What to do, from what was found (pure, so its branches are tested without a package manager):
 * `{ action: 'none' }`, `{ action: 'fail', why, message }` (why: the short reason the skip line gives) or `{ action: 'install', steps, stop }` where each step is
 * an argv and `stop` (or null) stops the service the installation started.
 */
export function decide(facts) {
  const { missing, root, sudo, aptGet, packageInstalled, systemd, service } = facts;
  if (missing.length === 0) return { action: 'none' };
  const what = missing.join(' and ');
  if (packageInstalled) {
    return { action: 'fail', why: `Debian's prometheus package is installed, but ${what} is not on PATH`, message: `${PREFIX} Debian's prometheus package is installed, but ${what} is not on PATH (it installs them in /usr/bin): add /usr/bin to PATH` };
  }
  if (!aptGet) {
    return { action: 'fail', why: `no ${what} and no apt-get to install them`, message: `${PREFIX} the tests need ${what} (Debian's prometheus package) and there is no apt-get here to install it: install Prometheus so that promtool and prometheus are on PATH` };
  }
  if (!root && !sudo) {
    return { action: 'fail', why: `no ${what}, and not root and no sudo to install them`, message: `${PREFIX} the tests need ${what}: not root and no sudo to install Debian's prometheus package; run 'apt-get install prometheus' as root once` };
  }
  // sudo resets the environment: the variable goes on its command line.
  const as = root ? [] : ['sudo'];
  const quiet = root ? [] : ['DEBIAN_FRONTEND=noninteractive'];
  const steps = [
    [...as, 'apt-get', 'update', '-qq'],
    [...as, ...quiet, 'apt-get', 'install', '-y', '-qq', 'prometheus'],
  ];
  const stop = systemd ? [...as, 'systemctl', 'stop', 'prometheus'] : service ? [...as, 'service', 'prometheus', 'stop'] : null;
  return { action: 'install', steps, stop };
}

function packageInstalled() {
  if (!onPath('dpkg-query')) return false;
  const r = spawnSync('dpkg-query', ['-W', '-f=${Status}', 'prometheus'], { encoding: 'utf8' });
  // "install ok installed"; not "unknown ok not-installed" or "deinstall ok config-files".
  return r.status === 0 && r.stdout.trim().endsWith(' installed');
}

function lastLine(text) {
  return (text ?? '').trim().split('\n').filter(Boolean).pop() ?? '';
}

export function main() {
  const required = toolsRequired();
  const missing = NEEDED.filter((c) => !onPath(c));
  const plan = decide({
    missing,
    root: process.getuid?.() === 0,
    sudo: onPath('sudo'),
    aptGet: onPath('apt-get'),
    packageInstalled: missing.length > 0 && packageInstalled(),
    // sd_booted(3): systemd is the running init when this directory exists.
    systemd: existsSync('/run/systemd/system') && onPath('systemctl'),
    service: onPath('service'),
  });
  if (plan.action === 'none') return 0;
  if (plan.action === 'fail') {
    if (!required) {
      process.stderr.write(`${skipLine(missing, plan.why)}\n`);
      return 0;
    }
    process.stderr.write(`${plan.message}\n`);
    return 1;
  }
  process.stderr.write(`${PREFIX} ${missing.join(' and ')} not on PATH: installing Debian's prometheus package (${plan.steps[1].join(' ')})\n`);
  for (const argv of plan.steps) {
    const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (r.status !== 0) {
      const why = r.error ? r.error.message : `exit ${r.status ?? r.signal}${lastLine(r.stderr) ? `: ${lastLine(r.stderr)}` : ''}`;
      if (!required) {
        process.stderr.write(`${skipLine(missing, `'${argv.join(' ')}' failed (${why})`)}\n`);
        return 0;
      }
      process.stderr.write(`${PREFIX} '${argv.join(' ')}' failed (${why}); install Debian's prometheus package by hand\n`);
      return 1;
    }
  }
  if (plan.stop) {
    // Best effort: where no init system runs, the package started nothing.
    spawnSync(plan.stop[0], plan.stop.slice(1), { stdio: 'ignore' });
    process.stderr.write(`${PREFIX} installed; stopped any prometheus service the installation started (the tests start their own): ${plan.stop.join(' ')}\n`);
  }
  const still = NEEDED.filter((c) => !onPath(c));
  if (still.length > 0) {
    if (!required) {
      process.stderr.write(`${skipLine(still, `installed Debian's prometheus package, but ${still.join(' and ')} is still not on PATH`)}\n`);
      return 0;
    }
    process.stderr.write(`${PREFIX} installed Debian's prometheus package, but ${still.join(' and ')} is still not on PATH\n`);
    return 1;
  }
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exitCode = main();
