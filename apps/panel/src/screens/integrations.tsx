import { integrationChannels } from '@inbox/contracts/web';
import { type FormEvent, useState } from 'react';
import { type Schemas, unwrap } from '../api';
import { type Channel, capabilities, configFields } from '../channel-forms';
import { Badge, ErrorNote, Field, Loaded, Time } from '../components';
import { useAction, useResource } from '../hooks';
import { useSession } from '../session';

type Integration = Schemas['Integration'];

/** Why the provider, not an operator, disconnected an integration, and what brings it back. */
const statusReasons: Record<NonNullable<Integration['status_reason']>, string> = {
  credentials_rejected:
    'The provider refused its credentials: connect again once it takes them, or add an integration with new ones.',
  callback_taken:
    'Another integration of this provider account registered its callback URL since, so the provider calls that one: connect again to take it back.',
};

function ConnectButton({
  integration,
  workspaceId,
  onChanged,
}: {
  integration: Integration;
  workspaceId: string;
  onChanged(): void;
}) {
  const { client } = useSession();
  const action = useAction();
  const next = integration.status === 'connected' ? 'disconnected' : 'connected';
  return (
    <>
      <button
        type="button"
        className="secondary"
        disabled={action.busy}
        onClick={() =>
          action.run(async () => {
            await unwrap(
              client.PATCH('/admin/v1/workspaces/{workspace_id}/integrations/{integration_id}', {
                params: { path: { workspace_id: workspaceId, integration_id: integration.id } },
                body: { status: next },
              }),
            );
            onChanged();
          })
        }
      >
        {next === 'connected' ? 'Connect' : 'Disconnect'}
        <span className="visually-hidden"> {integration.name ?? integration.channel}</span>
      </button>
      <ErrorNote error={action.error} />
    </>
  );
}

const flagNames = {
  sendMessage: 'send-message',
  externalSend: 'replies (external send)',
  receivesInbound: 'inbound messages',
  hasTemplates: 'templates',
} as const;

function NewIntegration({ workspaceId, onCreated }: { workspaceId: string; onCreated(): void }) {
  const { client } = useSession();
  const [channel, setChannel] = useState<Channel>(integrationChannels[0]!);
  const [name, setName] = useState('');
  const [config, setConfig] = useState<Record<string, string>>({});
  const create = useAction();
  const fields = configFields(channel);
  const can = capabilities(channel);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    // Fields left empty are left out, so the API answers for what is missing in its own words.
    const given = Object.fromEntries(
      fields.flatMap(({ key }) => (config[key]?.trim() ? [[key, config[key].trim()]] : [])),
    );
    const created = await create.run(() =>
      unwrap(
        client.POST('/admin/v1/workspaces/{workspace_id}/integrations', {
          params: { path: { workspace_id: workspaceId } },
          body: { channel, name: name.trim() || null, config: given },
        }),
      ),
    );
    if (!created) return;
    setConfig({});
    setName('');
    onCreated();
  };

  return (
    <section className="card" aria-labelledby="new-integration-title">
      <h2 id="new-integration-title">Add an integration</h2>
      <form className="stack-form" onSubmit={submit}>
        <Field label="Channel">
          <select
            value={channel}
            onChange={(event) => {
              setChannel(event.target.value as Channel);
              setConfig({});
              create.clearError();
            }}
          >
            {integrationChannels.map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
        </Field>
        <p className="muted small">
          This channel:{' '}
          {(Object.keys(flagNames) as Array<keyof typeof flagNames>)
            .filter((flag) => can[flag])
            .map((flag) => flagNames[flag])
            .join(', ') || 'no capability yet'}
          .
        </p>
        <Field label="Name" hint="Optional">
          <input value={name} onChange={(event) => setName(event.target.value)} />
        </Field>
        <fieldset>
          <legend>Configuration of {channel}</legend>
          {fields.map((field) => (
            <Field
              key={`${channel}:${field.key}`}
              label={`${field.key}${field.required ? '' : ' (optional)'}`}
              hint={field.defaultValue ? `Default: ${field.defaultValue}` : undefined}
            >
              <input
                name={field.key}
                type={field.kind === 'secret' ? 'password' : field.kind === 'url' ? 'url' : 'text'}
                autoComplete="off"
                placeholder={field.defaultValue ?? (field.kind === 'url' ? 'https://…' : '')}
                value={config[field.key] ?? ''}
                onChange={(event) => setConfig((before) => ({ ...before, [field.key]: event.target.value }))}
              />
            </Field>
          ))}
        </fieldset>
        <button type="submit" disabled={create.busy}>
          {create.busy ? 'Connecting…' : 'Add and connect'}
        </button>
      </form>
      <ErrorNote error={create.error} />
    </section>
  );
}

/** Integrations: each channel connected to the workspace, its status, and a form per channel. */
export function Integrations({ workspaceId }: { workspaceId: string }) {
  const { client } = useSession();
  const integrations = useResource(`integrations:${workspaceId}`, () =>
    unwrap(
      client.GET('/admin/v1/workspaces/{workspace_id}/integrations', {
        params: { path: { workspace_id: workspaceId } },
      }),
    ),
  );
  return (
    <main className="page">
      <h1>Integrations</h1>
      <section className="card">
        <h2>Connected channels</h2>
        <Loaded
          what="integrations"
          resource={integrations}
          isEmpty={(data) => data.integrations.length === 0}
          empty="No integration yet: add one to send and receive messages."
        >
          {(data) => (
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Channel</th>
                  <th scope="col">Status</th>
                  <th scope="col">Connected</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.integrations.map((integration) => (
                  <tr key={integration.id}>
                    <td data-label="Name">
                      {integration.name ?? <span className="muted">unnamed</span>}
                      <div className="muted small">{integration.id}</div>
                    </td>
                    <td data-label="Channel">
                      {integration.channel} <span className="muted small">({integration.provider})</span>
                    </td>
                    <td data-label="Status">
                      <Badge value={integration.status} />
                      {integration.status_reason && (
                        <div className="muted small">{statusReasons[integration.status_reason]}</div>
                      )}
                    </td>
                    <td data-label="Connected">
                      <Time iso={integration.connected_at} />
                    </td>
                    <td className="actions">
                      <ConnectButton
                        integration={integration}
                        workspaceId={workspaceId}
                        onChanged={() => void integrations.reload()}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Loaded>
      </section>
      <NewIntegration workspaceId={workspaceId} onCreated={() => void integrations.reload()} />
    </main>
  );
}
