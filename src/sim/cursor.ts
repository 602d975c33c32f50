// Opaque cursors: base64url(JSON state) + "." + HMAC tag. The tag key comes from the seed so two runs issue the
// same cursors (same bytes); a forged cursor fails the tag, and a cursor issued for another query fails the
// query fingerprint it carries.
import { createHmac } from 'node:crypto';

export interface CursorState {
  /** Fingerprint of the query the cursor belongs to. */
  q: string;
  [k: string]: unknown;
}

export class CursorCodec {
  private readonly key: Buffer;
  constructor(seed: number) {
    this.key = createHmac('sha256', 'tallyhouse-sim-cursor').update(String(seed)).digest();
  }

  encode(state: CursorState): string {
    const body = Buffer.from(JSON.stringify(state)).toString('base64url');
    return `${body}.${this.tag(body)}`;
  }

  /** Returns the state, or an error text naming what is wrong. */
  decode(cursor: string, fingerprint: string): CursorState | { error: string } {
    const dot = cursor.indexOf('.');
    if (dot <= 0 || this.tag(cursor.slice(0, dot)) !== cursor.slice(dot + 1)) return { error: 'cursor: not a cursor issued by this API (pass next_cursor back unchanged)' };
    let state: CursorState;
    try {
      state = JSON.parse(Buffer.from(cursor.slice(0, dot), 'base64url').toString('utf8')) as CursorState;
    } catch {
      return { error: 'cursor: not a cursor issued by this API (pass next_cursor back unchanged)' };
    }
    if (state.q !== fingerprint) return { error: 'cursor: issued for a different query; keep every other parameter unchanged while paging' };
    return state;
  }

  private tag(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url').slice(0, 22);
  }
}
