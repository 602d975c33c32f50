import { existsSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './support/process.js';

describe('start-up conflicts', () => {
  it('a busy port is one line naming it, exit 1, before the store or anything else starts', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as AddressInfo).port;
    const dataDir = join(mkdtempSync(join(tmpdir(), 'th-port-')), 'data');
    try {
      const p = runCli(['serve'], { PORT: String(port), DATA_DIR: dataDir });
      expect((await p.exited).code).toBe(1);
      expect(p.stderr().trim().split('\n')).toEqual([`tallyhouse: port ${port} on 127.0.0.1 is already in use (another Tallyhouse?): stop that process or set PORT to a free port`]);
      // Nothing was opened: no data directory, no migration, no job.
      expect(existsSync(dataDir)).toBe(false);
      expect(p.stdout()).not.toMatch(/store ready|job started/);
    } finally {
      busy.close();
    }
  });
});
