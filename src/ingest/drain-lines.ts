// Kept only because src/ingest/webhooks.ts (owned elsewhere) still imports its formatter from here: the one
// DateTime64 formatter is src/store/values.ts's. Delete this file once webhooks.ts imports toDateTime64.
export { toDateTime64 as formatDateTime64 } from '../store/values.js';
