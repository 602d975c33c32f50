// The disk-pressure state (src/ingest/drain/disk-pressure.ts) by hand: it starts below DISK_MIN_FREE_BYTES and ends
// once the free space holds the spool's backlog above the threshold, not only when the backlog is empty. The
// platform does not retry a refused drain batch, so every extra second of the state loses lines (the review found
// the state held for as long as a slow store took to take the whole backlog, with gigabytes free).
import { describe, expect, it } from 'vitest';
import { DiskPressure } from '../../../src/ingest/drain/disk-pressure.js';

const MIB = 1024 * 1024;

function state(minFreeMiB: number) {
  const disk = { free: 1000 * MIB, backlog: 0 };
  const pressure = new DiskPressure({ path: '/data', minFreeBytes: minFreeMiB * MIB, backlogBytes: () => disk.backlog, freeBytes: () => disk.free, cacheMs: 0 });
  return { disk, pressure };
}

describe('disk pressure state', () => {
  it('starts below the threshold; ends once free space holds the backlog above it, with a backlog still spooled', () => {
    const { disk, pressure } = state(256);
    expect(pressure.reason()).toBeUndefined();
    disk.free = 200 * MIB;
    disk.backlog = 100 * MIB;
    expect(pressure.reason()).toMatch(/below DISK_MIN_FREE_BYTES \(256\.0 MiB\)/);
    // Above the threshold, but not by the backlog: still refusing, so the freed space goes to the replay.
    disk.free = 300 * MIB;
    expect(pressure.reason()).toMatch(/room for its spool backlog \(104857600 bytes\)/);
    // Exactly the threshold plus the backlog: takes lines again, though 100 MiB are still to be stored.
    disk.free = 356 * MIB;
    expect(pressure.reason()).toBeUndefined();
  });

  it('a full disk met while writing starts the state whatever statfs said', () => {
    const { disk, pressure } = state(256);
    disk.backlog = 10 * MIB;
    pressure.hitFull();
    disk.free = 260 * MIB;
    expect(pressure.reason()).toMatch(/room for its spool backlog/);
    disk.free = 266 * MIB;
    expect(pressure.reason()).toBeUndefined();
  });
});
