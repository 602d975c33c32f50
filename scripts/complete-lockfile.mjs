#!/usr/bin/env node
// Adds lockfile entries for platform-specific optional dependencies that `npm install` left out.
//
// Why: this machine's npm registry mirrors only some platforms' binaries (e.g. chdb's darwin libraries and
// rollup's non-linux builds are absent), so `npm install` cannot read their manifests and omits them from
// package-lock.json; `npm ci` (npm 11) then refuses the lockfile ("Missing: @chdb/lib-darwin-arm64@ from lock
// file"). An entry with the right os/cpu/libc is skipped on other platforms without being fetched.
// Run after any `npm install` that changes package-lock.json: `node scripts/complete-lockfile.mjs`.
import { readFileSync, writeFileSync } from 'node:fs';

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const packages = lock.packages;

const OS = ['darwin', 'linux', 'win32', 'android', 'freebsd', 'openbsd', 'netbsd', 'sunos', 'aix', 'openharmony'];
const CPU = { arm64: 'arm64', aarch64: 'arm64', x64: 'x64', ia32: 'ia32', arm: 'arm', riscv64: 'riscv64', ppc64: 'ppc64', s390x: 's390x', loong64: 'loong64', mips64el: 'mips64el' };

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = parts.find((p) => OS.includes(p)) ?? (parts.includes('win32') ? 'win32' : undefined);
  const cpuPart = parts.find((p) => p in CPU);
  const libc = parts.includes('musl') ? 'musl' : parts.includes('gnu') || parts.includes('gnueabihf') ? 'glibc' : undefined;
  return { os, cpu: cpuPart ? CPU[cpuPart] : undefined, libc: os === 'linux' ? libc : undefined };
}

let added = 0;
for (const [location, pkg] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const nested = `${location ? `${location}/` : ''}node_modules/${name}`;
    if (packages[nested] || packages[`node_modules/${name}`]) continue;
    const { os, cpu, libc } = platformOf(name);
    if (!os || !cpu) {
      console.error(`skipped ${name}@${version}: cannot tell its platform from its name`);
      continue;
    }
    packages[`node_modules/${name}`] = {
      version,
      ...(cpu ? { cpu: [cpu] } : {}),
      ...(pkg.dev ? { dev: true } : {}),
      ...(libc ? { libc: [libc] } : {}),
      optional: true,
      os: [os],
    };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`added ${added} lockfile entries`);
