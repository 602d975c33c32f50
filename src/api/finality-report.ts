// Reads the collections of a range (sql/026) and hands them to the pure finality module: what /cost, the finance
// report and the FOCUS export call. `now` is the service clock (Runtime.now), never the machine's: a day's finality
// depends on it, and a test sets it (CONTRIBUTING.md rule 12).
import type { Store } from '../store/client.js';
import { dayCollections } from '../store/tables/cost-day-collections.js';
import { daysFinality, summarizeFinality, type Finality } from '../insights/finality.js';

export async function loadFinality(
  store: Pick<Store, 'client'>,
  q: { product: 'serverless' | 'model_api'; timezone: string; from: string; to: string; windowHours: number; now: Date },
): Promise<Finality> {
  const collections = await dayCollections(store, { product: q.product, timezone: q.timezone, from: q.from, to: q.to });
  return summarizeFinality(daysFinality({ ...q, collections, now: q.now }));
}

/** Both products: a day is final when it is final for each. */
export async function loadFinalityBoth(
  store: Pick<Store, 'client'>,
  q: { timezone: string; from: string; to: string; windowHours: number; now: Date },
): Promise<Finality> {
  const [a, b] = await Promise.all([loadFinality(store, { ...q, product: 'serverless' }), loadFinality(store, { ...q, product: 'model_api' })]);
  const days = a.days.map((d, i) => (d.final ? b.days[i] : d));
  return summarizeFinality(days);
}
