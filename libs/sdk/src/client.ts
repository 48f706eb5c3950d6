import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { paths } from './generated/api.js';

// The schemas' types come with the client, so a browser can import this module alone (the package's
// entry also brings the webhook signatures, which need Node's crypto).
export type { components, operations, paths } from './generated/api.js';

type PathsUnder<Prefix extends string> = {
  [Path in keyof paths as Path extends `${Prefix}${string}` ? Path : never]: paths[Path];
};
/** The spec's endpoints, called with a workspace's API key. */
export type PublicPaths = PathsUnder<'/api/'>;
/** The operator's API, called with the admin token. */
export type AdminPaths = PathsUnder<'/admin/'>;

/** Anything openapi-fetch takes (a `fetch` of your own, say) but the headers, which carry the key. */
type Options = Omit<ClientOptions, 'baseUrl' | 'headers'> & { baseUrl: string };

export type InboxClient = Client<PublicPaths>;
export type AdminClient = Client<AdminPaths>;

/** The public API as a workspace: `client.POST('/api/v1/send-message', { body })`. */
export function createInboxClient({ apiKey, ...options }: Options & { apiKey: string }): InboxClient {
  return createClient<PublicPaths>({ ...options, headers: { authorization: `Bearer ${apiKey}` } });
}

/** The admin API (`/admin/v1/…`), for the platform's operator. */
export function createAdminClient({ adminToken, ...options }: Options & { adminToken: string }): AdminClient {
  return createClient<AdminPaths>({ ...options, headers: { authorization: `Bearer ${adminToken}` } });
}
