/**
 * How many webhooks a workspace may have. A lease visits a bounded number of endpoints with pending
 * deliveries (the dispatcher's DeliveryStore.lease), and a workspace's tens of thousands, retries waiting
 * or disabled, would have stood between every other workspace's due deliveries and the lease that finds
 * them.
 */
export const endpointsPerWorkspace = 50;

/**
 * How many integrations a workspace may have. Each is background work shared with every tenant (its
 * catalogue refreshed, its callbacks admitted, its tokens renewed at a provider the tenant names), and tens
 * of thousands of them would be one tenant's claim on all of it.
 */
export const integrationsPerWorkspace = 100;
