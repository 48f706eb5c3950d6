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

/**
 * How large an integration's config may be: keys, and characters a value. The connector reads a config
 * on every callback and widget request it admits for the integration (a live chat's `allowed_origins`,
 * a secret hashed for a signature), so a mebibyte of it, as the body limit would have let in, was a
 * tenant's way to make each of those requests cost the process milliseconds. A provider's longest
 * credential (a Meta system user's token) is a few hundred characters.
 */
export const integrationConfigLimits = { keys: 32, valueChars: 8_192, allowedOrigins: 100 } as const;

/**
 * How many of a workspace's sends may wait on providers at once in one process. A provider the tenant
 * names may keep every call open until the timeout, and each waiting send holds a socket, memory, a
 * messaging handler and a gateway request (with its Idempotency-Key lease renewed every second) for all
 * of that time: without a bound, one tenant sending at its provider's silence held more of each with
 * every request. Beyond it a send is refused at once (503) and nothing is sent. A provider that answers
 * in 100 ms still gets 640 sends a second of one workspace through each replica (provider-connector's
 * sendOnce).
 */
export const sendsInFlightPerWorkspace = 64;
