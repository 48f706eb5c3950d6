import { useState } from 'react';
import { unwrap } from '../api';
import { Badge, ErrorNote, Loaded, SecretOnce, Time } from '../components';
import { useAction, useResource } from '../hooks';
import { useSession } from '../session';
import { StatusButton } from './workspaces';

/** Settings → Workspace: what the workspace is, and its API key (rotated, never shown again). */
export function WorkspaceSettings({ workspaceId }: { workspaceId: string }) {
  const { client } = useSession();
  const path = { params: { path: { workspace_id: workspaceId } } };
  const workspace = useResource(`workspace:${workspaceId}`, () =>
    unwrap(client.GET('/admin/v1/workspaces/{workspace_id}', path)),
  );
  const [confirming, setConfirming] = useState(false);
  const [rotated, setRotated] = useState<string>();
  const rotate = useAction();

  const rotateNow = async () => {
    const answer = await rotate.run(() =>
      unwrap(client.POST('/admin/v1/workspaces/{workspace_id}/api-key', path)),
    );
    setConfirming(false);
    if (answer) setRotated(answer.api_key);
  };

  return (
    <main className="page">
      <h1>Settings → Workspace</h1>
      <section className="card">
        <h2>Workspace</h2>
        <Loaded what="the workspace" resource={workspace}>
          {(data) => (
            <dl className="facts">
              <dt>Name</dt>
              <dd>{data.name}</dd>
              <dt>Id</dt>
              <dd>
                <code>{data.id}</code>
              </dd>
              <dt>Status</dt>
              <dd>
                <Badge value={data.status} />{' '}
                <StatusButton workspace={data} onChanged={() => void workspace.reload()} />
              </dd>
              <dt>Default country code</dt>
              <dd>{data.default_country_code}</dd>
              <dt>Created</dt>
              <dd>
                <Time iso={data.created_at} />
              </dd>
            </dl>
          )}
        </Loaded>
      </section>
      <section className="card" aria-labelledby="api-key-title">
        <h2 id="api-key-title">API Key</h2>
        <p>
          The workspace's key (<code>sk_live_…</code>) authenticates every call of the public API. It was
          shown once, when the workspace was created; only its digest is kept, so it cannot be shown again.
          Rotate it to get a new one.
        </p>
        {confirming ? (
          <fieldset className="confirm">
            <legend>Confirm the rotation</legend>
            <p className="warning">
              The current key is revoked immediately: from the moment you rotate, every call made with it is
              refused. Give the new key to every system that calls the API.
            </p>
            <button type="button" className="danger" disabled={rotate.busy} onClick={rotateNow}>
              Rotate now
            </button>{' '}
            <button type="button" className="secondary" onClick={() => setConfirming(false)}>
              Cancel
            </button>
          </fieldset>
        ) : (
          <button
            type="button"
            onClick={() => {
              setRotated(undefined);
              setConfirming(true);
            }}
          >
            Rotate API key
          </button>
        )}
        <ErrorNote error={rotate.error} />
        {rotated ? (
          <SecretOnce
            label="New API key"
            value={rotated}
            note="The old key no longer works. This is the only time the new key is shown: copy it now."
          />
        ) : null}
      </section>
    </main>
  );
}
