import { describe, expect, it } from 'vitest';
import { SessionBudgets } from './session-budgets.js';

describe('SessionBudgets', () => {
  it("refuses past an address's, an integration's or a workspace's budget, each with its wait", async () => {
    const budgets = new SessionBudgets({ perAddress: 2, perNetwork: 10, perIntegration: 3, perWorkspace: 4 });
    const spend = (integration: string, address: string) => budgets.spend(integration, 'workspace', address);
    expect(await spend('chat-1', '192.0.2.1')).toBeUndefined();
    expect(await spend('chat-1', '192.0.2.1')).toBeUndefined();
    expect(await spend('chat-1', '192.0.2.1')).toBe(60);
    expect(await spend('chat-1', '192.0.2.2')).toBeUndefined();
    // The integration's three are spent; the workspace has one left, for its other widget.
    expect(await spend('chat-1', '192.0.2.3')).toBe(60);
    expect(await spend('chat-2', '192.0.2.3')).toBeUndefined();
    expect(await spend('chat-2', '192.0.2.4')).toBe(60);
  });

  it('keeps nothing of an address refused because its integration or workspace has no room left', async () => {
    const budgets = new SessionBudgets({
      perAddress: 10,
      perNetwork: 100,
      perIntegration: 1,
      perWorkspace: 2,
    });
    expect(await budgets.spend('chat-1', 'workspace', '192.0.2.1')).toBeUndefined();
    expect(await budgets.spend('chat-2', 'workspace', '192.0.2.1')).toBeUndefined();
    for (let i = 2; i < 50; i++)
      expect(await budgets.spend(`chat-${i % 2 === 0 ? 1 : 3}`, 'workspace', `192.0.2.${i}`)).toBe(60);
    for (let i = 2; i < 50; i++) {
      expect(await budgets.byAddress.get(`chat-1|192.0.2.${i}`)).toBeNull();
      expect(await budgets.byAddress.get(`chat-3|192.0.2.${i}`)).toBeNull();
    }
  });

  it('gives back what it spent when a later budget refuses, requests at once included', async () => {
    const budgets = new SessionBudgets({
      perAddress: 5,
      perNetwork: 10,
      perIntegration: 10,
      perWorkspace: 3,
    });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => budgets.spend(`chat-${i}`, 'workspace', '192.0.2.1')),
    );
    expect(answers.filter((wait) => wait === undefined)).toHaveLength(3);
    // Only the three taken are spent, of the address's budget in each integration and of the integrations'.
    let spentByAddress = 0;
    let spentByIntegration = 0;
    for (let i = 0; i < 6; i++) {
      spentByAddress += (await budgets.byAddress.get(`chat-${i}|192.0.2.1`))?.consumedPoints ?? 0;
      spentByIntegration += (await budgets.byIntegration.get(`chat-${i}`))?.consumedPoints ?? 0;
    }
    expect(spentByAddress).toBe(3);
    expect(spentByIntegration).toBe(3);
  });

  it("refuses a network past its budget, however many of its addresses ask, and leaves the integration's to others", async () => {
    const budgets = new SessionBudgets({
      perAddress: 10,
      perNetwork: 3,
      perIntegration: 5,
      perWorkspace: 100,
    });
    const answers = [];
    for (let i = 1; i <= 5; i++) answers.push(await budgets.spend('chat', 'workspace', `192.0.2.${i}`));
    expect(answers).toEqual([undefined, undefined, undefined, 60, 60]);
    // Another network's visitors still open theirs.
    expect(await budgets.spend('chat', 'workspace', '198.51.100.7')).toBeUndefined();
    expect(await budgets.spend('chat', 'workspace', '198.51.100.8')).toBeUndefined();
  });
});
