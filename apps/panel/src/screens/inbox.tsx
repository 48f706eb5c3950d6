import { type FormEvent, useState } from 'react';
import { type Schemas, unwrap } from '../api';
import { capabilities } from '../channel-forms';
import { Badge, Empty, ErrorNote, Field, Loaded, Time } from '../components';
import { useAction, useResource } from '../hooks';
import { Link } from '../router';
import { useSession } from '../session';
import { useTeam } from './team';

type Summary = Schemas['ConversationSummary'];
type Message = Schemas['MessageView'];
type Status = NonNullable<Schemas['ConversationSummary']['status']>;

/** How often the inbox and an open thread ask for new messages (polling, cleared when the screen goes). */
export const inboxPollMs = 5_000;
export const threadPollMs = 3_000;

const filters: Array<{ label: string; status?: Status }> = [
  { label: 'All' },
  { label: 'Open', status: 'open' },
  { label: 'Assigned', status: 'assigned' },
  { label: 'Resolved', status: 'resolved' },
];

type Team = ReturnType<typeof useTeam>;

function assigneeName(team: Team, type: string | null, id: string | null): string | undefined {
  if (!type || !id) return undefined;
  const found =
    type === 'human'
      ? team.members.data?.members.find((member) => member.id === id)
      : team.agents.data?.agents.find((agent) => agent.id === id);
  return found ? `${found.name}${type === 'agent' ? ' (AI agent)' : ''}` : type;
}

const contactLabel = (contact: { name: string | null; phone: string | null }) =>
  contact.name ?? contact.phone ?? 'unnamed contact';

function ConversationList({
  workspaceId,
  selected,
  team,
}: {
  workspaceId: string;
  selected?: string;
  team: Team;
}) {
  const { client } = useSession();
  const [status, setStatus] = useState<Status>();
  const [older, setOlder] = useState<{ items: Summary[]; next: string | null }>();
  const more = useAction();
  const first = useResource(
    `conversations:${workspaceId}:${status ?? 'all'}`,
    () =>
      unwrap(
        client.GET('/admin/v1/workspaces/{workspace_id}/conversations', {
          params: { path: { workspace_id: workspaceId }, query: { status, limit: 50 } },
        }),
      ),
    { pollMs: inboxPollMs },
  );

  const loadMore = (before: string) =>
    more.run(async () => {
      const page = await unwrap(
        client.GET('/admin/v1/workspaces/{workspace_id}/conversations', {
          params: { path: { workspace_id: workspaceId }, query: { status, limit: 50, before } },
        }),
      );
      setOlder((was) => ({ items: [...(was?.items ?? []), ...page.conversations], next: page.older_before }));
    });

  return (
    <section className="conversation-list" aria-label="Conversations">
      <fieldset className="filters">
        <legend className="visually-hidden">Filter by status</legend>
        {filters.map((filter) => (
          <button
            key={filter.label}
            type="button"
            className="filter"
            aria-pressed={status === filter.status}
            onClick={() => {
              // A new filter starts from its own first page.
              setOlder(undefined);
              setStatus(filter.status);
            }}
          >
            {filter.label}
          </button>
        ))}
      </fieldset>
      <p className="muted small">Updates every {inboxPollMs / 1000} s.</p>
      <Loaded
        what="conversations"
        resource={first}
        isEmpty={(data) => data.conversations.length === 0}
        empty={
          status
            ? `No ${status} conversation.`
            : 'No conversation yet: messages sent or received appear here.'
        }
      >
        {(data) => {
          const seen = new Set(data.conversations.map((c) => c.id));
          const items = [...data.conversations, ...(older?.items ?? []).filter((c) => !seen.has(c.id))];
          const next = older ? older.next : data.older_before;
          return (
            <>
              <ul className="conversations">
                {items.map((conversation) => (
                  <li key={conversation.id}>
                    <Link
                      to={`/workspaces/${workspaceId}/inbox/${conversation.id}`}
                      className="conversation"
                      aria-current={conversation.id === selected ? 'page' : undefined}
                    >
                      <span className="conversation-head">
                        <strong>{contactLabel(conversation.contact)}</strong>
                        <Badge value={conversation.status} />
                      </span>
                      <span className="muted small">
                        {conversation.contact.phone ? `${conversation.contact.phone} · ` : ''}
                        {conversation.integration.channel}
                        {conversation.assigned_to_type
                          ? ` · ${assigneeName(team, conversation.assigned_to_type, conversation.assigned_to_id)}`
                          : ''}
                      </span>
                      {conversation.last_message ? (
                        <span className="preview">{conversation.last_message.text}</span>
                      ) : null}
                    </Link>
                  </li>
                ))}
              </ul>
              {next ? (
                <button
                  type="button"
                  className="secondary"
                  disabled={more.busy}
                  onClick={() => loadMore(next)}
                >
                  Load more
                </button>
              ) : null}
              <ErrorNote error={more.error} />
            </>
          );
        }}
      </Loaded>
    </section>
  );
}

function MessageItem({ message }: { message: Message }) {
  if (message.direction === 'internal') {
    return (
      <li className="message system" aria-label="System event">
        <span className="system-label">System event</span> {message.text} · <Time iso={message.created_at} />
      </li>
    );
  }
  const who =
    message.direction === 'inbound'
      ? 'Contact'
      : (message.sender_name ??
        (message.sender_type === 'human' ? 'Team' : (message.sender_type ?? 'Platform')));
  return (
    <li className={`message ${message.direction}`}>
      <span className="message-meta">
        {who} · <Time iso={message.created_at} />
      </span>
      <span className="message-text">{message.text}</span>
      <span className="message-meta">
        {message.status}
        {message.delivery_status ? ` · ${message.delivery_status}` : ''}
        {message.error ? <span className="error-text"> · {message.error}</span> : null}
      </span>
    </li>
  );
}

function FunnelMove({
  workspaceId,
  contactId,
  conversationId,
}: {
  workspaceId: string;
  contactId: string;
  conversationId: string;
}) {
  const { client } = useSession();
  const path = { params: { path: { workspace_id: workspaceId } } };
  const pipelines = useResource(`pipelines:${workspaceId}`, () =>
    unwrap(client.GET('/admin/v1/workspaces/{workspace_id}/pipelines', path)),
  );
  const contact = useResource(`contact:${contactId}`, () =>
    unwrap(
      client.GET('/admin/v1/workspaces/{workspace_id}/contacts/{contact_id}', {
        params: { path: { workspace_id: workspaceId, contact_id: contactId } },
      }),
    ),
  );
  const [pipelineId, setPipelineId] = useState('');
  const [stage, setStage] = useState('');
  const move = useAction();
  const list = pipelines.data?.pipelines ?? [];
  const pipeline = list.find((p) => p.id === pipelineId) ?? list[0];
  const stages = pipeline?.stages_config ?? [];
  const chosenStage = stages.some((s) => s.key === stage) ? stage : stages[0]?.key;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!pipeline || !chosenStage) return;
    const moved = await move.run(() =>
      unwrap(
        client.PUT('/admin/v1/workspaces/{workspace_id}/pipelines/{pipeline_id}/contacts/{contact_id}', {
          params: { path: { workspace_id: workspaceId, pipeline_id: pipeline.id, contact_id: contactId } },
          body: { stage: chosenStage, conversation_id: conversationId },
        }),
      ),
    );
    if (moved) await contact.reload();
  };

  return (
    <section className="funnel-move" aria-label="Funnels">
      <h3>Funnels</h3>
      {contact.data?.stages.length ? (
        <ul className="list compact">
          {contact.data.stages.map((position) => (
            <li key={position.pipeline_id}>
              {position.pipeline_name}: <strong>{position.stage_name}</strong>
            </li>
          ))}
        </ul>
      ) : (
        <p className="muted small">Not in any funnel.</p>
      )}
      {list.length === 0 ? (
        pipelines.loading ? null : (
          <p className="muted small">
            No funnel yet: create one under <Link to={`/workspaces/${workspaceId}/funnels`}>Funnels</Link>.
          </p>
        )
      ) : (
        <form className="inline-form" onSubmit={submit}>
          <Field label="Funnel">
            <select value={pipeline?.id ?? ''} onChange={(event) => setPipelineId(event.target.value)}>
              {list.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Stage">
            <select value={chosenStage ?? ''} onChange={(event) => setStage(event.target.value)}>
              {stages.map((s) => (
                <option key={s.key} value={s.key}>
                  {s.name}
                </option>
              ))}
            </select>
          </Field>
          <button type="submit" className="secondary" disabled={move.busy}>
            Move lead
          </button>
        </form>
      )}
      <ErrorNote error={pipelines.error ?? contact.error ?? move.error} />
    </section>
  );
}

function Thread({
  workspaceId,
  conversationId,
  team,
}: {
  workspaceId: string;
  conversationId: string;
  team: Team;
}) {
  const { client } = useSession();
  const path = { params: { path: { workspace_id: workspaceId, conversation_id: conversationId } } };
  const conversation = useResource(
    `conversation:${conversationId}`,
    () => unwrap(client.GET('/admin/v1/workspaces/{workspace_id}/conversations/{conversation_id}', path)),
    { pollMs: threadPollMs },
  );
  const [older, setOlder] = useState<{ messages: Message[]; next: string | null }>();
  const [assignee, setAssignee] = useState('');
  const [reply, setReply] = useState('');
  const act = useAction();
  const send = useAction();
  const loadOlder = useAction();

  const change = (action: () => Promise<unknown>) =>
    act.run(async () => {
      await action();
      await conversation.reload();
    });
  const assign = (event: FormEvent) => {
    event.preventDefault();
    const [type, id] = assignee.split(':');
    if (!type || !id) return;
    return change(() =>
      unwrap(
        client.POST('/admin/v1/workspaces/{workspace_id}/conversations/{conversation_id}/assign', {
          ...path,
          body: { type: type as 'human' | 'agent', id },
        }),
      ),
    );
  };
  const submitReply = async (event: FormEvent) => {
    event.preventDefault();
    const sent = await send.run(() =>
      unwrap(
        client.POST('/admin/v1/workspaces/{workspace_id}/conversations/{conversation_id}/messages', {
          ...path,
          body: { text: reply },
        }),
      ),
    );
    if (sent) {
      setReply('');
      await conversation.reload();
    }
  };

  return (
    <section className="thread" aria-label="Conversation">
      <p className="back-link">
        <Link to={`/workspaces/${workspaceId}/inbox`}>← Conversations</Link>
      </p>
      <Loaded what="the conversation" resource={conversation}>
        {(data) => {
          const can = capabilities(data.integration.channel);
          const olderMessages = older?.messages ?? [];
          const next = older ? older.next : data.older_before;
          const members = team.members.data?.members ?? [];
          const agents = team.agents.data?.agents ?? [];
          return (
            <>
              <header className="thread-head">
                <h2>{contactLabel(data.contact)}</h2>
                <p className="muted">
                  {data.contact.phone ? `${data.contact.phone} · ` : ''}
                  {data.integration.channel} · <Badge value={data.status} />
                  {data.assigned_to_type ? (
                    <> · assigned to {assigneeName(team, data.assigned_to_type, data.assigned_to_id)}</>
                  ) : (
                    ' · unassigned'
                  )}
                </p>
                <div className="toolbar">
                  <form className="inline-form" onSubmit={assign}>
                    <Field label="Assign to">
                      <select value={assignee} onChange={(event) => setAssignee(event.target.value)}>
                        <option value="">Choose…</option>
                        <optgroup label="Members">
                          {members.map((member) => (
                            <option key={member.id} value={`human:${member.id}`}>
                              {member.name}
                            </option>
                          ))}
                        </optgroup>
                        <optgroup label="AI agents">
                          {agents.map((agent) => (
                            <option key={agent.id} value={`agent:${agent.id}`}>
                              {agent.name}
                            </option>
                          ))}
                        </optgroup>
                      </select>
                    </Field>
                    <button type="submit" className="secondary" disabled={act.busy || assignee === ''}>
                      Assign
                    </button>
                  </form>
                  {data.assigned_to_type ? (
                    <button
                      type="button"
                      className="secondary"
                      disabled={act.busy}
                      onClick={() =>
                        change(() =>
                          unwrap(
                            client.POST(
                              '/admin/v1/workspaces/{workspace_id}/conversations/{conversation_id}/assign',
                              { ...path, body: { type: null, id: null } },
                            ),
                          ),
                        )
                      }
                    >
                      Unassign
                    </button>
                  ) : null}
                  {data.status !== 'resolved' ? (
                    <button
                      type="button"
                      disabled={act.busy}
                      onClick={() =>
                        change(() =>
                          unwrap(
                            client.POST(
                              '/admin/v1/workspaces/{workspace_id}/conversations/{conversation_id}/resolve',
                              path,
                            ),
                          ),
                        )
                      }
                    >
                      Resolve
                    </button>
                  ) : null}
                </div>
                <ErrorNote error={act.error} />
              </header>
              {next ? (
                <button
                  type="button"
                  className="secondary"
                  disabled={loadOlder.busy}
                  onClick={() =>
                    loadOlder.run(async () => {
                      const page = await unwrap(
                        client.GET('/admin/v1/workspaces/{workspace_id}/conversations/{conversation_id}', {
                          params: { ...path.params, query: { before: next } },
                        }),
                      );
                      setOlder({ messages: [...page.messages, ...olderMessages], next: page.older_before });
                    })
                  }
                >
                  Load older messages
                </button>
              ) : null}
              <ErrorNote error={loadOlder.error} />
              {data.messages.length === 0 && olderMessages.length === 0 ? (
                <Empty>No message yet.</Empty>
              ) : (
                <ol className="messages" aria-label="Messages" aria-live="polite">
                  {[...olderMessages, ...data.messages].map((message) => (
                    <MessageItem key={message.id} message={message} />
                  ))}
                </ol>
              )}
              {can.externalSend ? (
                <form className="reply" onSubmit={submitReply}>
                  <Field label="Reply">
                    <textarea
                      rows={3}
                      value={reply}
                      onChange={(event) => setReply(event.target.value)}
                      onKeyDown={(event) => {
                        if (event.key === 'Enter' && (event.ctrlKey || event.metaKey))
                          event.currentTarget.form?.requestSubmit();
                      }}
                    />
                  </Field>
                  <button type="submit" disabled={send.busy || reply.trim() === ''}>
                    {send.busy ? 'Sending…' : 'Send reply'}
                  </button>
                  <span className="muted small"> Ctrl+Enter sends.</span>
                  <ErrorNote error={send.error} />
                </form>
              ) : (
                <p className="muted">Replies cannot be sent on the {data.integration.channel} channel yet.</p>
              )}
              <FunnelMove workspaceId={workspaceId} contactId={data.contact.id} conversationId={data.id} />
            </>
          );
        }}
      </Loaded>
    </section>
  );
}

/** The inbox: conversations filtered by status, and the thread of the one chosen. */
export function Inbox({ workspaceId, conversationId }: { workspaceId: string; conversationId?: string }) {
  const team = useTeam(workspaceId);
  return (
    <main className={`page inbox${conversationId ? ' has-thread' : ''}`}>
      <h1 className="visually-hidden">Inbox</h1>
      <ConversationList workspaceId={workspaceId} selected={conversationId} team={team} />
      {conversationId ? (
        <Thread key={conversationId} workspaceId={workspaceId} conversationId={conversationId} team={team} />
      ) : (
        <section className="thread empty-thread">
          <Empty>Choose a conversation.</Empty>
        </section>
      )}
    </main>
  );
}
