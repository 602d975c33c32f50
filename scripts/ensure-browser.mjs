#!/usr/bin/env node
// `npm test` runs this after ensure-prometheus (the pretest script): the web console's browser tests
// (test/console/) drive Debian's `chromium-headless-shell` with playwright-core and render with fonts-liberation.
// When the browser or the fonts are missing it installs both packages (apt-get as root, through sudo otherwise),
// as ensure-prometheus installs promtool. When it cannot: under CI=true that is a failure (the browser tests are
// mandatory there, and under TALLYHOUSE_TEST_REQUIRE_TOOLS=1 as .ci/run sets); elsewhere one line says how to install them and the browser tests skip.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { onPath, toolsRequired } from './ensure-prometheus.mjs';

export const BROWSER = 'chromium-headless-shell';
export const PACKAGES = ['chromium-headless-shell', 'fonts-liberation'];
export const FONTS_DIR = '/usr/share/fonts/truetype/liberation';
export const INSTALL_HINT = `install Debian's ${PACKAGES.join(' and ')} (as root: apt-get install -y ${PACKAGES.join(' ')})`;
const PREFIX = 'ensure-browser:';

/** The browser tests are mandatory under CI=true and where the test tools are (TALLYHOUSE_TEST_REQUIRE_TOOLS). */
export function browserRequired(env = process.env) {
  return env.CI === 'true' || env.CI === '1' || toolsRequired(env);
}

/** What is missing of the browser tests' needs, from PATH and the fonts directory. */
export function missingParts({ browser = onPath(BROWSER), fonts = existsSync(FONTS_DIR) } = {}) {
  return [...(browser ? [] : [BROWSER]), ...(fonts ? [] : ['fonts-liberation'])];
}

/**
 * What to do (pure, so its branches are tested without a package manager): `{ action: 'none' }`,
 * `{ action: 'install', steps }`, or `{ action: 'fail' | 'skip', message }` (fail under CI, skip elsewhere).
 */
export function decide({ missing, root, sudo, aptGet, ci }) {
  if (missing.length === 0) return { action: 'none' };
  const refuse = (why) => ({ action: ci ? 'fail' : 'skip', message: `${PREFIX} the web console's browser tests need ${missing.join(' and ')}: ${why}; ${INSTALL_HINT}${ci ? '' : ' (they skip until then)'}` });
  if (!aptGet) return refuse('there is no apt-get here to install them');
  if (!root && !sudo) return refuse('not root and no sudo to install them');
  const as = root ? [] : ['sudo'];
  const quiet = root ? [] : ['DEBIAN_FRONTEND=noninteractive'];
  return { action: 'install', steps: [[...as, 'apt-get', 'update', '-qq'], [...as, ...quiet, 'apt-get', 'install', '-y', '-qq', ...PACKAGES]] };
}

function lastLine(text) {
  return (text ?? '').trim().split('\n').filter(Boolean).pop() ?? '';
}

export function main(env = process.env) {
  const missing = missingParts();
  const ci = browserRequired(env);
  const plan = decide({ missing, root: process.getuid?.() === 0, sudo: onPath('sudo'), aptGet: onPath('apt-get'), ci });
  if (plan.action === 'none') return 0;
  if (plan.action !== 'install') {
    process.stderr.write(`${plan.message}\n`);
    return plan.action === 'fail' ? 1 : 0;
  }
  process.stderr.write(`${PREFIX} ${missing.join(' and ')} missing: installing ${PACKAGES.join(' ')} (${plan.steps[1].join(' ')})\n`);
  for (const argv of plan.steps) {
    const r = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (r.status !== 0) {
      const why = r.error ? r.error.message : `exit ${r.status ?? r.signal}${lastLine(r.stderr) ? `: ${lastLine(r.stderr)}` : ''}`;
      process.stderr.write(`${PREFIX} '${argv.join(' ')}' failed (${why}); ${INSTALL_HINT}\n`);
      return ci ? 1 : 0;
    }
  }
  const still = missingParts();
  if (still.length > 0) {
    process.stderr.write(`${PREFIX} installed ${PACKAGES.join(' ')}, but ${still.join(' and ')} is still missing\n`);
    return ci ? 1 : 0;
  }
  return 0;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) process.exitCode = main();
