// Money panels follow the currency variable: no panel hard-codes a currency unit (Grafana units cannot take a
// variable), and every Cost panel with an amount names ${currency} in its title.
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const dir = fileURLToPath(new URL('../../dashboards/', import.meta.url));
type Panel = { title: string; fieldConfig?: { defaults?: { unit?: string }; overrides?: Array<{ properties: Array<{ id: string; value: unknown }> }> } };
const panels = (file: string) => (JSON.parse(readFileSync(`${dir}${file}`, 'utf8')) as { panels: Panel[] }).panels;

describe('currency in dashboards', () => {
  it('no panel labels amounts with a fixed currency', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
    expect(files.length).toBeGreaterThanOrEqual(6);
    const fixed = files.flatMap((f) =>
      panels(f).filter((p) => {
        const units = [p.fieldConfig?.defaults?.unit, ...(p.fieldConfig?.overrides ?? []).flatMap((o) => o.properties.filter((x) => x.id === 'unit').map((x) => x.value))];
        return units.some((u) => typeof u === 'string' && u.startsWith('currency'));
      }).map((p) => `${f}: ${p.title}`),
    );
    expect(fixed).toEqual([]);
  });

  it('the Cost dashboard names the selected currency on its money panels', () => {
    const money = panels('cost.json').filter((p) => p.title.includes('${currency}'));
    expect(money.map((p) => p.title)).toEqual(expect.arrayContaining(['Cost in range (${currency})', 'Daily cost by app (${currency})']));
  });
});
