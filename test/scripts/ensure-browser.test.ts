// The pretest step for the console's browser tests (scripts/ensure-browser.mjs): installs Debian's
// chromium-headless-shell and fonts-liberation when missing, as root or through sudo; when it cannot, fails under
// CI and otherwise says how to install them (the browser tests then skip).
import { describe, expect, it } from 'vitest';
import { decide, missingParts } from '../../scripts/ensure-browser.mjs';

describe('ensure-browser', () => {
  it('does nothing when the browser and fonts are there', () => {
    expect(missingParts({ browser: true, fonts: true })).toEqual([]);
    expect(decide({ missing: [], root: false, sudo: false, aptGet: false, ci: true })).toEqual({ action: 'none' });
  });

  it('installs both packages with apt-get, as root or through sudo', () => {
    const missing = missingParts({ browser: false, fonts: true });
    expect(missing).toEqual(['chromium-headless-shell']);
    expect(decide({ missing, root: true, sudo: false, aptGet: true, ci: false })).toEqual({
      action: 'install',
      steps: [['apt-get', 'update', '-qq'], ['apt-get', 'install', '-y', '-qq', 'chromium-headless-shell', 'fonts-liberation']],
    });
    expect(decide({ missing, root: false, sudo: true, aptGet: true, ci: false })).toEqual({
      action: 'install',
      steps: [['sudo', 'apt-get', 'update', '-qq'], ['sudo', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', 'install', '-y', '-qq', 'chromium-headless-shell', 'fonts-liberation']],
    });
  });

  it('fails under CI when it cannot install, and elsewhere says how (the tests skip)', () => {
    const missing = missingParts({ browser: false, fonts: false });
    const ci = decide({ missing, root: false, sudo: false, aptGet: true, ci: true });
    expect(ci.action).toBe('fail');
    const local = decide({ missing, root: true, sudo: false, aptGet: false, ci: false });
    expect(local.action).toBe('skip');
    expect('message' in local && local.message).toBe(
      "ensure-browser: the web console's browser tests need chromium-headless-shell and fonts-liberation: there is no apt-get here to install them; install Debian's chromium-headless-shell and fonts-liberation (as root: apt-get install -y chromium-headless-shell fonts-liberation) (they skip until then)",
    );
  });
});
