// The embedded engine runs with the bounds the configuration gives it (README, "Sizing"), not a ClickHouse
// server's defaults (5 GiB mark caches, 90% of the machine's memory).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../src/runtime.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';

let rt: Runtime;
beforeAll(async () => {
  rt = await openTestRuntime({ EMBEDDED_MAX_MEMORY_BYTES: '1500000000', EMBEDDED_CACHE_BYTES: '33554432' });
});
afterAll(async () => {
  await closeRuntime(rt);
});

describe('embedded engine limits', () => {
  it('memory limit and mark caches as configured, uncompressed cache off', async () => {
    const rows = await queryRows<{ name: string; value: string }>(
      rt,
      "SELECT name, value FROM system.server_settings WHERE name IN ('max_server_memory_usage', 'mark_cache_size', 'index_mark_cache_size', 'uncompressed_cache_size') ORDER BY name",
    );
    expect(Object.fromEntries(rows.map((r) => [r.name, Number(r.value)]))).toEqual({
      index_mark_cache_size: 33554432,
      mark_cache_size: 33554432,
      max_server_memory_usage: 1500000000,
      uncompressed_cache_size: 0,
    });
  });
});
