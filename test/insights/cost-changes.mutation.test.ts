// More of src/insights/cost-changes.ts on hand-worked numbers (issue 31: the mutation score of the money modules).
// Each expected figure is worked out here from the README's formulas (volume = (q1 - q0) x p0 with p0 = s0 / q0,
// price = (s1 - s0) - volume, discount = -(d1 - d0), new and gone groups whole, rounding half away from zero at
// 12 decimals), never taken from the module's output.
import { describe, expect, it } from 'vitest';
import { attributeChanges, describeGroupChange, groupKey, type CostLine } from '../../src/insights/cost-changes.js';

const line = (group: Record<string, string>, item: string, quantity: string, subtotal: string, discount = '0', currency = 'USD', product: CostLine['product'] = 'serverless'): CostLine =>
  ({ product, group, item, currency, quantity, subtotal, discount });

describe('attributeChanges, more cases by hand', () => {
  it('a group whose cost did not move while its parts did is changed, not unchanged', () => {
    // 10 units at 1 (10) -> 20 units at 0.5 (10): volume = 10 x 1 = 10, price = 0 - 10 = -10, difference 0.
    const r = attributeChanges({ baseline: [line({ app: 'a' }, 'CPU', '10', '10')], current: [line({ app: 'a' }, 'CPU', '20', '10')] });
    expect(r.groups[0]).toMatchObject({ status: 'changed', difference: '0', volume: '10', price: '-10', discount: '0', new: '0', gone: '0' });
    expect(r.groups[0].items[0]).toMatchObject({ difference: '0', volume: '10', price: '-10', discount: '0', new: '0', gone: '0' });
    expect([r.groups[0].items[0].baseline.unit_price, r.groups[0].items[0].current.unit_price]).toEqual(['1', '0.5']);
  });

  it('every figure of a changed group and its items: an item gone from the group and one that came', () => {
    // Group acme/m: CPU 100 s for 1, discount 0.1 -> gone (0 s); H100 new: 10 s for 6, discount 0.6.
    // CPU: volume = (0 - 100) x 0.01 = -1; price = (0 - 1) - (-1) = 0; discount = -(0 - 0.1) = 0.1; difference -0.9.
    // H100 (no baseline quantity): volume = s1 = 6; price 0; discount = -0.6; difference 5.4.
    const r = attributeChanges({
      baseline: [line({ app: 'acme/m' }, 'CPU', '100', '1', '0.1')],
      current: [line({ app: 'acme/m' }, 'GPU-H100', '10', '6', '0.6')],
    });
    expect(r.groups).toEqual([
      {
        product: 'serverless',
        group: { app: 'acme/m' },
        currency: 'USD',
        status: 'changed',
        baseline: { subtotal: '1', discount: '0.1', cost: '0.9' },
        current: { subtotal: '6', discount: '0.6', cost: '5.4' },
        difference: '4.5',
        volume: '5',
        price: '0',
        discount: '-0.5',
        new: '0',
        gone: '0',
        items: [
          {
            item: 'CPU',
            baseline: { quantity: '100', subtotal: '1', discount: '0.1', cost: '0.9', unit_price: '0.01' },
            current: { quantity: '0', subtotal: '0', discount: '0', cost: '0', unit_price: null },
            difference: '-0.9', volume: '-1', price: '0', discount: '0.1', new: '0', gone: '0',
          },
          {
            item: 'GPU-H100',
            baseline: { quantity: '0', subtotal: '0', discount: '0', cost: '0', unit_price: null },
            current: { quantity: '10', subtotal: '6', discount: '0.6', cost: '5.4', unit_price: '0.6' },
            difference: '5.4', volume: '6', price: '0', discount: '-0.6', new: '0', gone: '0',
          },
        ],
      },
    ]);
    expect(r.totals).toEqual([{ currency: 'USD', baseline: '0.9', current: '5.4', difference: '4.5', volume: '5', price: '0', discount: '-0.5', new: '0', gone: '0' }]);
  });

  it('a new group and a gone group: their items are whole new and gone, with no volume, price or discount', () => {
    const r = attributeChanges({
      baseline: [line({ app: 'old' }, 'CPU', '4', '2', '0.5')],
      current: [line({ app: 'new' }, 'CPU', '3', '1.5', '0.25')],
    });
    const [gone, created] = [r.groups.find((g) => g.status === 'gone')!, r.groups.find((g) => g.status === 'new')!];
    expect(gone.items).toEqual([
      {
        item: 'CPU',
        baseline: { quantity: '4', subtotal: '2', discount: '0.5', cost: '1.5', unit_price: '0.5' },
        current: { quantity: '0', subtotal: '0', discount: '0', cost: '0', unit_price: null },
        difference: '-1.5', volume: '0', price: '0', discount: '0', new: '0', gone: '-1.5',
      },
    ]);
    expect(created.items).toHaveLength(1);
    expect(created.items[0]).toMatchObject({ item: 'CPU', difference: '1.25', volume: '0', price: '0', discount: '0', new: '1.25', gone: '0' });
    expect([gone.new, gone.gone, created.new, created.gone]).toEqual(['0', '-1.5', '1.25', '0']);
    // |-1.5| > |1.25|: the gone group ranks first.
    expect(r.groups.map((g) => g.status)).toEqual(['gone', 'new']);
    expect(r.totals).toEqual([{ currency: 'USD', baseline: '1.5', current: '1.25', difference: '-0.25', volume: '0', price: '0', discount: '0', new: '1.25', gone: '-1.5' }]);
  });

  it('volume rounds half away from zero, both ways', () => {
    // p0 = 0.000000000001 / 2 = half of the last place. +1 unit: +0.0000000000005 -> 0.000000000001;
    // -1 unit: -0.0000000000005 -> -0.000000000001. Price takes the rest: s1 - s0 - volume.
    const up = attributeChanges({ baseline: [line({ app: 'x' }, 'u', '2', '0.000000000001')], current: [line({ app: 'x' }, 'u', '3', '0.000000000001')] });
    expect(up.groups[0]).toMatchObject({ volume: '0.000000000001', price: '-0.000000000001', difference: '0' });
    const down = attributeChanges({ baseline: [line({ app: 'x' }, 'u', '2', '0.000000000001')], current: [line({ app: 'x' }, 'u', '1', '0.000000000001')] });
    expect(down.groups[0]).toMatchObject({ volume: '-0.000000000001', price: '0.000000000001', difference: '0' });
    // Below the half it rounds toward zero: p0 = 0.000000000001 / 3; +1 unit is 0.00000000000033 -> 0.
    const below = attributeChanges({ baseline: [line({ app: 'x' }, 'u', '3', '0.000000000001')], current: [line({ app: 'x' }, 'u', '4', '0.000000000001')] });
    expect(below.groups[0]).toMatchObject({ volume: '0', price: '0' });
    // A unit price that is not one decimal (2/3): 0.666666666666|67 rounds up to ...667.
    const price = attributeChanges({ baseline: [line({ app: 'x' }, 'u', '3', '2')], current: [line({ app: 'x' }, 'u', '3', '2')] });
    expect(price.groups[0].items[0].baseline.unit_price).toBe('0.666666666667');
    expect(price.groups[0].status).toBe('unchanged');
  });

  it('signs: a credit line (negative quantity and subtotal) prices at s0 / q0', () => {
    // q0 = -4, s0 = -2: p0 = 0.5; q1 = 2, s1 = 1: volume = (2 - -4) x 0.5 = 3, price = (1 - -2) - 3 = 0.
    const r = attributeChanges({ baseline: [line({ app: 'x' }, 'u', '-4', '-2')], current: [line({ app: 'x' }, 'u', '2', '1')] });
    expect(r.groups[0]).toMatchObject({ volume: '3', price: '0', difference: '3' });
    // q0 = 4, s0 = -2 (p0 = -0.5); q1 = 6, s1 = -3: volume = 2 x -0.5 = -1, price 0.
    const n = attributeChanges({ baseline: [line({ app: 'x' }, 'u', '4', '-2')], current: [line({ app: 'x' }, 'u', '6', '-3')] });
    expect(n.groups[0]).toMatchObject({ volume: '-1', price: '0', difference: '-1' });
  });

  it('ranks by the size of the change, a fall as a rise; ties by product, group and currency', () => {
    const r = attributeChanges({
      baseline: [line({ app: 'b' }, 'CPU', '1', '5'), line({ app: 'a' }, 'CPU', '1', '1'), line({ app: 'c' }, 'CPU', '1', '1')],
      current: [line({ app: 'b' }, 'CPU', '1', '1'), line({ app: 'a' }, 'CPU', '1', '3'), line({ app: 'c' }, 'CPU', '1', '3')],
    });
    // b fell by 4; a and c rose by 2 each: b, then a before c.
    expect(r.groups.map((g) => [g.group.app, g.difference])).toEqual([['b', '-4'], ['a', '2'], ['c', '2']]);
    const t = attributeChanges({
      baseline: [],
      current: [line({ app: 'z' }, 'CPU', '1', '2', '0', 'USD'), line({ app: 'z' }, 'CPU', '1', '2', '0', 'EUR'), line({ endpoint: 'e' }, 'image', '1', '2', '0', 'USD', 'model_api')],
    });
    // Equal changes: model_api before serverless, EUR before USD (the order of the group's identity).
    expect(t.groups.map((g) => [g.product, g.currency])).toEqual([['model_api', 'USD'], ['serverless', 'EUR'], ['serverless', 'USD']]);
    expect(t.totals.map((x) => x.currency)).toEqual(['EUR', 'USD']);
  });

  it('a group is its key values whatever their order; lines of one item add up', () => {
    expect(groupKey({ b: '1', a: '2' })).toBe('[["a","2"],["b","1"]]');
    const r = attributeChanges({
      baseline: [line({ app: 'x', machine_type: 'CPU' }, 'CPU', '1', '1'), line({ machine_type: 'CPU', app: 'x' }, 'CPU', '1', '1', '0.5')],
      current: [line({ machine_type: 'CPU', app: 'x' }, 'CPU', '3', '3')],
    });
    expect(r.groups).toHaveLength(1);
    expect(r.groups[0].baseline).toEqual({ subtotal: '2', discount: '0.5', cost: '1.5' });
    expect(r.groups[0].items[0].baseline.quantity).toBe('2');
  });

  it('an item with no quantity either side (a fee): its change is all price', () => {
    // 0 units for 1 -> 0 units for 2: no price per unit to carry, so volume 0 and price = 2 - 1 = 1.
    const r = attributeChanges({ baseline: [line({ app: 'x' }, 'fee', '0', '1')], current: [line({ app: 'x' }, 'fee', '0', '2')] });
    expect(r.groups[0]).toMatchObject({ volume: '0', price: '1', difference: '1' });
  });

  it('items in name order, whichever period brought them', () => {
    const r = attributeChanges({
      baseline: [line({ app: 'x' }, 'GPU', '1', '1')],
      current: [line({ app: 'x' }, 'GPU', '1', '1'), line({ app: 'x' }, 'CPU', '1', '1')],
    });
    expect(r.groups[0].items.map((i) => i.item)).toEqual(['CPU', 'GPU']);
  });

  it('names the side and the figure of an amount it cannot keep', () => {
    const bad = '0.0000000000001';
    expect(() => attributeChanges({ baseline: [], current: [line({ app: 'x' }, 'u', bad, '1')] })).toThrow('cost line current quantity: 0.0000000000001 has more than 12 decimals');
    expect(() => attributeChanges({ baseline: [line({ app: 'x' }, 'u', '1', '1', bad)], current: [] })).toThrow('cost line baseline discount: 0.0000000000001 has more than 12 decimals');
  });
});

describe('describeGroupChange, by hand', () => {
  const changes = (baseline: CostLine[], current: CostLine[]) => attributeChanges({ baseline, current }).groups;

  it('new and gone groups in words, a group without keys by its product', () => {
    const [g1, g2] = changes([line({ app: 'acme/old' }, 'CPU', '1', '2.5', '0.5')], [line({ app: 'acme/new' }, 'CPU', '1', '3', '0.25')]);
    const byStatus = Object.fromEntries([g1, g2].map((g) => [g.status, describeGroupChange(g)]));
    expect(byStatus).toEqual({ new: 'new acme/new: +2.75 USD', gone: 'gone acme/old: -2 USD' });
    const [whole] = changes([line({}, 'CPU', '1', '1')], [line({}, 'CPU', '2', '2')]);
    expect(describeGroupChange(whole)).toBe('volume effect +1 USD on serverless');
    const [two] = changes([line({ app: 'acme/a', machine_type: 'CPU' }, 'CPU', '1', '1')], [line({ app: 'acme/a', machine_type: 'CPU' }, 'CPU', '1', '1')]);
    // Nothing moved: the first part (volume) names it, with a plus sign on zero.
    expect(describeGroupChange(two)).toBe('volume effect +0 USD on acme/a/CPU');
  });

  it('the largest part by size names the change, a negative one included', () => {
    // 10 -> 8 units at 1, discount 0 -> 3: volume -2, price 0, discount -3: discount is the largest.
    const [d] = changes([line({ app: 'a' }, 'CPU', '10', '10')], [line({ app: 'a' }, 'CPU', '8', '8', '3')]);
    expect(describeGroupChange(d)).toBe('discount effect -3 USD on a');
    // 10 -> 12 units, unit price 1 -> 0.5: volume +2, price 6 - 10 - 2 = -6: price, and the price that moved.
    const [p] = changes([line({ app: 'a' }, 'CPU', '10', '10')], [line({ app: 'a' }, 'CPU', '12', '6')]);
    expect(describeGroupChange(p)).toBe('price effect -6 USD on a: unit price CPU 1 -> 0.5');
    // Price largest, but the only item with both prices kept it: no detail (the other item is new to the group).
    const [q] = changes(
      [line({ app: 'a' }, 'CPU', '10', '10'), line({ app: 'a' }, 'GPU', '1', '1')],
      [line({ app: 'a' }, 'CPU', '10', '10'), line({ app: 'a' }, 'GPU', '0', '5')],
    );
    // GPU: volume = (0 - 1) x 1 = -1, price = (5 - 1) - (-1) = 5; its current unit price is none (no quantity).
    expect(describeGroupChange(q)).toBe('price effect +5 USD on a');
    // Price largest (CPU 1 -> 2: +10) beside an item new to the group (GPU: volume +1): only CPU's price moved.
    const [n] = changes([line({ app: 'a' }, 'CPU', '10', '10')], [line({ app: 'a' }, 'CPU', '10', '20'), line({ app: 'a' }, 'GPU', '1', '1')]);
    expect(describeGroupChange(n)).toBe('price effect +10 USD on a: unit price CPU 1 -> 2');
    // Two prices moved (CPU 1 -> 2: +10, GPU 2 -> 3: +1): both named.
    const [two] = changes(
      [line({ app: 'a' }, 'CPU', '10', '10'), line({ app: 'a' }, 'GPU', '1', '2')],
      [line({ app: 'a' }, 'CPU', '10', '20'), line({ app: 'a' }, 'GPU', '1', '3')],
    );
    expect(describeGroupChange(two)).toBe('price effect +11 USD on a: unit price CPU 1 -> 2, GPU 2 -> 3');
  });

  it('a volume change is not followed by the prices that moved less', () => {
    // 10 -> 30 units, unit price 1 -> 1.1: volume = 20 x 1 = 20, price = (33 - 10) - 20 = 3.
    const [v] = changes([line({ app: 'a' }, 'CPU', '10', '10')], [line({ app: 'a' }, 'CPU', '30', '33')]);
    expect(describeGroupChange(v)).toBe('volume effect +20 USD on a');
  });
});
