import { type FormEvent, useState } from 'react';
import { unwrap } from '../api';
import { ErrorNote, Field, Loaded, Time } from '../components';
import { useAction, useResource } from '../hooks';
import { useSession } from '../session';

/** The people and AI agents of a workspace: who its conversations are assigned to. */
export function useTeam(workspaceId: string) {
  const { client } = useSession();
  const path = { params: { path: { workspace_id: workspaceId } } };
  const members = useResource(`members:${workspaceId}`, () =>
    unwrap(client.GET('/admin/v1/workspaces/{workspace_id}/members', path)),
  );
  const agents = useResource(`agents:${workspaceId}`, () =>
    unwrap(client.GET('/admin/v1/workspaces/{workspace_id}/agents', path)),
  );
  return { members, agents };
}

export function Team({ workspaceId }: { workspaceId: string }) {
  const { client } = useSession();
  const { members, agents } = useTeam(workspaceId);
  const path = { params: { path: { workspace_id: workspaceId } } };
  const [memberName, setMemberName] = useState('');
  const [email, setEmail] = useState('');
  const [agentName, setAgentName] = useState('');
  const addMember = useAction();
  const addAgent = useAction();

  const submitMember = async (event: FormEvent) => {
    event.preventDefault();
    const created = await addMember.run(() =>
      unwrap(
        client.POST('/admin/v1/workspaces/{workspace_id}/members', {
          ...path,
          body: { name: memberName, email },
        }),
      ),
    );
    if (!created) return;
    setMemberName('');
    setEmail('');
    await members.reload();
  };
  const submitAgent = async (event: FormEvent) => {
    event.preventDefault();
    const created = await addAgent.run(() =>
      unwrap(
        client.POST('/admin/v1/workspaces/{workspace_id}/agents', { ...path, body: { name: agentName } }),
      ),
    );
    if (!created) return;
    setAgentName('');
    await agents.reload();
  };

  return (
    <main className="page two-columns">
      <section className="card" aria-labelledby="members-title">
        <h1 id="members-title">Members</h1>
        <Loaded
          what="members"
          resource={members}
          isEmpty={(data) => data.members.length === 0}
          empty="No member yet."
        >
          {(data) => (
            <ul className="list">
              {data.members.map((member) => (
                <li key={member.id}>
                  <strong>{member.name}</strong> <span className="muted">{member.email}</span>
                  <div className="muted small">
                    added <Time iso={member.created_at} />
                  </div>
                </li>
              ))}
            </ul>
          )}
        </Loaded>
        <form className="stack-form" onSubmit={submitMember} aria-label="New member">
          <h2>New member</h2>
          <Field label="Name">
            <input value={memberName} onChange={(event) => setMemberName(event.target.value)} />
          </Field>
          <Field label="Email">
            <input type="email" value={email} onChange={(event) => setEmail(event.target.value)} />
          </Field>
          <button type="submit" disabled={addMember.busy}>
            Add member
          </button>
          <ErrorNote error={addMember.error} />
        </form>
      </section>
      <section className="card" aria-labelledby="agents-title">
        <h1 id="agents-title">AI agents</h1>
        <Loaded
          what="AI agents"
          resource={agents}
          isEmpty={(data) => data.agents.length === 0}
          empty="No AI agent yet."
        >
          {(data) => (
            <ul className="list">
              {data.agents.map((agent) => (
                <li key={agent.id}>
                  <strong>{agent.name}</strong>
                  <div className="muted small">
                    added <Time iso={agent.created_at} />
                  </div>
                </li>
              ))}
            </ul>
          )}
        </Loaded>
        <form className="stack-form" onSubmit={submitAgent} aria-label="New AI agent">
          <h2>New AI agent</h2>
          <Field label="Name">
            <input value={agentName} onChange={(event) => setAgentName(event.target.value)} />
          </Field>
          <button type="submit" disabled={addAgent.busy}>
            Add AI agent
          </button>
          <ErrorNote error={addAgent.error} />
        </form>
      </section>
    </main>
  );
}
