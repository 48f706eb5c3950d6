import { type AdminClient, type components, createAdminClient } from '@inbox/sdk/client';

export type { AdminClient };

export type Schemas = components['schemas'];

/** A failed call, told with the API's own `error` text when it gave one. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export const unreachable = 'The gateway did not answer. Check that it is running and try again.';

/** The admin API on the gateway that served the panel, with the operator's token. */
export function adminClient(adminToken: string): AdminClient {
  return createAdminClient({ baseUrl: window.location.origin, adminToken });
}

/** The data of a call, or an ApiError carrying the API's `error` text (or what went wrong instead). */
export async function unwrap<R extends { data?: unknown; error?: unknown; response: Response }>(
  call: Promise<R>,
): Promise<NonNullable<R['data']>> {
  let result: R;
  try {
    result = await call;
  } catch {
    throw new ApiError(unreachable, 0);
  }
  if (!result.response.ok) {
    const text = (result.error as { error?: unknown } | undefined)?.error;
    throw new ApiError(
      typeof text === 'string' ? text : `The gateway answered ${result.response.status}.`,
      result.response.status,
    );
  }
  return result.data as NonNullable<R['data']>;
}

export const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
