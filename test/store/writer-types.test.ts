// Writes are typed by their table (CONTRIBUTING.md rule 13): tsc (`npm run typecheck`, and vitest's type pass
// below) fails when a collector hands the writer a row of another table.
import { describe, expectTypeOf, it } from 'vitest';
import type { BatchWriter } from '../../src/store/writer.js';
import { usageBuckets, type UsageBucketRow } from '../../src/store/tables/usage-buckets.js';
import { jobRuns } from '../../src/store/tables/job-runs.js';
import { tableWrite } from '../../src/collectors/common.js';
import { appRevisions } from '../../src/store/tables/app-revisions.js';

declare const writer: BatchWriter;
declare const usageRow: UsageBucketRow;

describe('the writer is typed by table', () => {
  it('accepts a table with its own rows and refuses another table\'s rows', () => {
    // Compile-time only: the calls are never run (the writer is a declaration).
    const compileOnly = () => {
      void writer.insert(usageBuckets, [usageRow]);
      // @ts-expect-error a usage row is not a job_runs row
      void writer.insert(jobRuns, [usageRow]);
      // @ts-expect-error nor an app_revisions row, through the collectors' tableWrite
      tableWrite(appRevisions, [usageRow]);
      // @ts-expect-error a table name is not a table definition
      void writer.insert('usage_buckets', [usageRow]);
      expectTypeOf(writer.insert<typeof usageBuckets.row>).parameter(1).toEqualTypeOf<ReadonlyArray<UsageBucketRow>>();
    };
    expectTypeOf(compileOnly).toBeFunction();
  });
});
