import { type FormEvent, useState } from 'react';
import { type Schemas, unwrap } from '../api';
import { Badge, ErrorNote, Field, Loaded, SecretOnce, Time } from '../components';
import { useAction, useResource } from '../hooks';
import { Link } from '../router';
import { useSession } from '../session';

type Workspace = Schemas['Workspace'];

/** Suspending stops the workspace's key at once; reactivating lets it in again. */
export function StatusButton({ workspace, onChanged }: { workspace: Workspace; onChanged(): void }) {
  const { client } = useSession();
  const action = useAction();
  const next = workspace.status === 'active' ? 'suspended' : 'active';
  const change = () =>
    action.run(async () => {
      await unwrap(
        client.PATCH('/admin/v1/workspaces/{workspace_id}', {
          params: { path: { workspace_id: workspace.id } },
          body: { status: next },
        }),
      );
      onChanged();
    });
  return (
    <>
      <button type="button" className="secondary" disabled={action.busy} onClick={change}>
        {next === 'suspended' ? 'Suspend' : 'Reactivate'}
        <span className="visually-hidden"> {workspace.name}</span>
      </button>
      <ErrorNote error={action.error} />
    </>
  );
}

export function Workspaces() {
  const { client } = useSession();
  const workspaces = useResource('workspaces', () => unwrap(client.GET('/admin/v1/workspaces')));
  const [name, setName] = useState('');
  const [country, setCountry] = useState('55');
  const [created, setCreated] = useState<Schemas['CreatedWorkspace']>();
  const create = useAction();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const workspace = await create.run(() =>
      unwrap(client.POST('/admin/v1/workspaces', { body: { name, default_country_code: country } })),
    );
    if (!workspace) return;
    setCreated(workspace);
    setName('');
    await workspaces.reload();
  };

  return (
    <main className="page">
      <h1>Workspaces</h1>
      <section className="card">
        <h2>New workspace</h2>
        <form className="inline-form" onSubmit={submit}>
          <Field label="Name">
            <input required value={name} onChange={(event) => setName(event.target.value)} />
          </Field>
          <Field label="Default country code" hint="For phone numbers given without one">
            <input
              inputMode="numeric"
              value={country}
              onChange={(event) => setCountry(event.target.value)}
              size={4}
            />
          </Field>
          <button type="submit" disabled={create.busy}>
            Create workspace
          </button>
        </form>
        <ErrorNote error={create.error} />
        {created ? (
          <div className="created">
            <p>
              Created <strong>{created.name}</strong>.{' '}
              <Link to={`/workspaces/${created.id}/inbox`}>Open its inbox</Link>
            </p>
            <SecretOnce
              label="API key"
              value={created.api_key}
              note="This is the only time the key is shown: only its digest is kept. Copy it now; if it is lost, rotate it under Settings → Workspace."
            />
          </div>
        ) : null}
      </section>
      <section className="card">
        <h2>All workspaces</h2>
        <Loaded
          what="workspaces"
          resource={workspaces}
          isEmpty={(data) => data.workspaces.length === 0}
          empty="No workspace yet: create the first one above."
        >
          {(data) => (
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Status</th>
                  <th scope="col">Created</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.workspaces.map((workspace) => (
                  <tr key={workspace.id}>
                    <td data-label="Name">
                      <Link to={`/workspaces/${workspace.id}/inbox`}>{workspace.name}</Link>
                      <div className="muted small">{workspace.id}</div>
                    </td>
                    <td data-label="Status">
                      <Badge value={workspace.status} />
                    </td>
                    <td data-label="Created">
                      <Time iso={workspace.created_at} />
                    </td>
                    <td className="actions">
                      <StatusButton workspace={workspace} onChanged={() => void workspaces.reload()} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Loaded>
      </section>
    </main>
  );
}
