/**
 * What an operator does in Evolution's manager before an integration can name an instance: creates it,
 * with the token its calls present as `apikey`, and pairs its phone. Evolution answers 404 to any call
 * naming an instance that was never created, so the sandbox does too.
 */
export async function createEvolutionInstance(
  sandboxUrl: string,
  instance: string,
  token: string,
  fetchImpl: typeof fetch = fetch,
): Promise<void> {
  const res = await fetchImpl(`${sandboxUrl}/_sandbox/alt-a/instances`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ instance, token }),
  });
  if (!res.ok)
    throw new Error(`the sandbox did not create instance ${instance}: ${res.status} ${await res.text()}`);
}
