// The change attribution module (src/insights/cost-changes.ts) on hand-worked numbers: each expected figure below is
// worked out by hand from the README's formulas (volume = (q1 - q0) x p0, price = (p1 - p0) x q1,
// discount = -(d1 - d0), new/gone groups whole), never taken from the module's output.
import { describe, expect, it } from 'vitest';
import { attributeChanges, describeGroupChange, type CostLine } from '../../src/insights/cost-changes.js';

const line = (group: Record<string, string>, item: string, quantity: string, subtotal: string, discount = '0', currency = 'USD', product: CostLine['product'] = 'serverless'): CostLine =>
  ({ product, group, item, currency, quantity, subtotal, discount });

describe('attributeChanges', () => {
  it('splits a group\'s change into volume, price and discount (hand-worked)', () => {
    // acme/a on H100: baseline 1000 s at 0.000575 = 0.575, discount 10% = 0.0575;
    // current 1500 s at 0.000600 = 0.9, discount 10% = 0.09.
    // volume = (1500 - 1000) x 0.000575 = 0.2875; price = (0.0006 - 0.000575) x 1500 = 0.0375;
    // discount = -(0.09 - 0.0575) = -0.0325; difference = (0.9 - 0.09) - (0.575 - 0.0575) = 0.81 - 0.5175 = 0.2925.
    const r = attributeChanges({
      baseline: [line({ app: 'acme/a' }, 'GPU-H100', '1000', '0.575', '0.0575')],
      current: [line({ app: 'acme/a' }, 'GPU-H100', '1500', '0.9', '0.09')],
    });
    expect(r.groups).toHaveLength(1);
    const g = r.groups[0];
    expect(g).toMatchObject({ status: 'changed', difference: '0.2925', volume: '0.2875', price: '0.0375', discount: '-0.0325', new: '0', gone: '0' });
    expect(g.baseline.cost).toBe('0.5175');
    expect(g.current.cost).toBe('0.81');
    expect(g.items[0].baseline.unit_price).toBe('0.000575');
    expect(g.items[0].current.unit_price).toBe('0.0006');
    expect(r.totals).toEqual([{ currency: 'USD', baseline: '0.5175', current: '0.81', difference: '0.2925', volume: '0.2875', price: '0.0375', discount: '-0.0325', new: '0', gone: '0' }]);
  });

  it('prices each item of a group at its own price, so a mix shift is volume, not price', () => {
    // acme/b: CPU 100 s at 0.00001 = 0.001 -> 0 s; H100 0 -> 10 s at 0.000575 = 0.00575 (an item new in the group).
    // CPU volume = (0 - 100) x 0.00001 = -0.001; H100 volume = 10 x 0.000575 = 0.00575; price 0 for both.
    const r = attributeChanges({
      baseline: [line({ app: 'acme/b' }, 'CPU', '100', '0.001')],
      current: [line({ app: 'acme/b' }, 'GPU-H100', '10', '0.00575')],
    });
    expect(r.groups[0]).toMatchObject({ status: 'changed', difference: '0.00475', volume: '0.00475', price: '0', discount: '0' });
  });

  it('counts new and gone groups whole and ranks top movers by the size of their change', () => {
    // gone acme/old 2.5 (discount 0.5): gone = -2; new acme/new 3; acme/same unchanged 1.
    const r = attributeChanges({
      baseline: [line({ app: 'acme/old' }, 'CPU', '250000', '2.5', '0.5'), line({ app: 'acme/same' }, 'CPU', '100000', '1')],
      current: [line({ app: 'acme/new' }, 'CPU', '300000', '3'), line({ app: 'acme/same' }, 'CPU', '100000', '1')],
    });
    expect(r.groups.map((g) => [g.group.app, g.status, g.difference, g.new, g.gone])).toEqual([
      ['acme/new', 'new', '3', '3', '0'],
      ['acme/old', 'gone', '-2', '0', '-2'],
      ['acme/same', 'unchanged', '0', '0', '0'],
    ]);
    expect(r.totals).toEqual([{ currency: 'USD', baseline: '3', current: '4', difference: '1', volume: '0', price: '0', discount: '0', new: '3', gone: '-2' }]);
  });

  it('keeps currencies apart and sums lines of the same item (several days) before pricing', () => {
    // svc-ai/flux-dev images: baseline days 10 + 30 images at 0.025 = 1.00; current 50 images: 20 at 0.025 (0.5)
    // and 30 at 0.035 (1.05): 50 images, 1.55. p0 = 0.025, p1 = 1.55 / 50 = 0.031.
    // volume = (50 - 40) x 0.025 = 0.25; price = (0.031 - 0.025) x 50 = 0.3; difference 0.55.
    const flux = { endpoint: 'svc-ai/flux-dev' };
    const r = attributeChanges({
      baseline: [
        line(flux, 'image', '10', '0.25', '0', 'USD', 'model_api'),
        line(flux, 'image', '30', '0.75', '0', 'USD', 'model_api'),
        line({ app: 'acme/eu' }, 'CPU', '10', '1', '0', 'EUR'),
      ],
      current: [
        line(flux, 'image', '20', '0.5', '0', 'USD', 'model_api'),
        line(flux, 'image', '30', '1.05', '0', 'USD', 'model_api'),
        line({ app: 'acme/eu' }, 'CPU', '10', '1', '0', 'EUR'),
      ],
    });
    const g = r.groups.find((x) => x.product === 'model_api')!;
    expect(g).toMatchObject({ difference: '0.55', volume: '0.25', price: '0.3' });
    expect(g.items[0].current.unit_price).toBe('0.031');
    expect(r.totals.map((t) => [t.currency, t.difference])).toEqual([['EUR', '0'], ['USD', '0.55']]);
    expect(describeGroupChange(g)).toBe('price effect +0.3 USD on svc-ai/flux-dev: unit price image 0.025 -> 0.031');
  });

  it('rounds only volume when a price is not one exact decimal, and the parts still add up exactly', () => {
    // baseline 3 units for 1.00 (p0 = 1/3); current 4 units for 1.00.
    // volume = (4 - 3) x 1/3 = 0.333333333333(3...) -> 0.333333333333 at 12 decimals; price = 0 - volume.
    const r = attributeChanges({
      baseline: [line({ app: 'x' }, 'u', '3', '1')],
      current: [line({ app: 'x' }, 'u', '4', '1')],
    });
    expect(r.groups[0]).toMatchObject({ difference: '0', volume: '0.333333333333', price: '-0.333333333333' });
  });

  it('refuses an amount with more decimals than it keeps rather than rounding it silently', () => {
    expect(() => attributeChanges({ baseline: [line({ app: 'x' }, 'u', '1', '0.0000000000001')], current: [] })).toThrow(/baseline subtotal/);
  });
});
