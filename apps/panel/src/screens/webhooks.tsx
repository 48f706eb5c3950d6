import { publicEventTypes } from '@inbox/contracts/web';
import { type FormEvent, useState } from 'react';
import { type Schemas, unwrap } from '../api';
import { Badge, ErrorNote, Field, Loaded, SecretOnce, Time } from '../components';
import { useAction, useResource } from '../hooks';
import { Link } from '../router';
import { useSession } from '../session';

type Webhook = Schemas['Webhook'];
type Delivery = Schemas['Delivery'];

/** How often an open delivery log asks for news. */
export const deliveryLogPollMs = 3_000;

/** `whsec_` + base64 of 24 random bytes: what the platform generates on rotation (libs/sdk/webhooks). */
function generateSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

function EnableButton({
  webhook,
  workspaceId,
  onChanged,
}: {
  webhook: Webhook;
  workspaceId: string;
  onChanged(): void;
}) {
  const { client } = useSession();
  const action = useAction();
  const toggle = () =>
    action.run(async () => {
      await unwrap(
        client.PATCH('/admin/v1/workspaces/{workspace_id}/webhooks/{webhook_id}', {
          params: { path: { workspace_id: workspaceId, webhook_id: webhook.id } },
          body: { enabled: !webhook.enabled },
        }),
      );
      onChanged();
    });
  return (
    <>
      <button type="button" className="secondary" disabled={action.busy} onClick={toggle}>
        {webhook.enabled ? 'Disable' : 'Enable'}
        <span className="visually-hidden"> {webhook.url}</span>
      </button>
      <ErrorNote error={action.error} />
    </>
  );
}

function NewWebhook({ workspaceId, onCreated }: { workspaceId: string; onCreated(): void }) {
  const { client } = useSession();
  const [url, setUrl] = useState('');
  const [all, setAll] = useState(true);
  const [events, setEvents] = useState<string[]>([]);
  const [secretMode, setSecretMode] = useState<'generate' | 'given' | 'none'>('generate');
  const [givenSecret, setGivenSecret] = useState('');
  const [ordered, setOrdered] = useState(false);
  const [maxPerSecond, setMaxPerSecond] = useState('');
  const [shownSecret, setShownSecret] = useState<string>();
  const create = useAction();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const secret =
      secretMode === 'generate' ? generateSecret() : secretMode === 'given' ? givenSecret : undefined;
    const created = await create.run(() =>
      unwrap(
        client.POST('/admin/v1/workspaces/{workspace_id}/webhooks', {
          params: { path: { workspace_id: workspaceId } },
          body: {
            url,
            events: (all ? ['*'] : events) as Schemas['CreateWebhookBody']['events'],
            secret: secret ?? null,
            ordered,
            max_per_second: maxPerSecond === '' ? null : Number(maxPerSecond),
          },
        }),
      ),
    );
    if (!created) return;
    setShownSecret(secretMode === 'generate' ? secret : undefined);
    setUrl('');
    setGivenSecret('');
    onCreated();
  };

  return (
    <section className="card" aria-labelledby="new-webhook-title">
      <h2 id="new-webhook-title">New webhook</h2>
      <form className="stack-form" onSubmit={submit}>
        <Field label="URL" hint="Must accept a POST with a JSON body; any 2xx acknowledges.">
          <input
            type="url"
            required
            placeholder="https://example.com/hooks/inbox"
            value={url}
            onChange={(event) => setUrl(event.target.value)}
          />
        </Field>
        <fieldset>
          <legend>Events</legend>
          <label className="check">
            <input type="checkbox" checked={all} onChange={(event) => setAll(event.target.checked)} />
            All events (<code>*</code>)
          </label>
          {publicEventTypes.map((type) => (
            <label className="check" key={type}>
              <input
                type="checkbox"
                disabled={all}
                checked={!all && events.includes(type)}
                onChange={(event) =>
                  setEvents((chosen) =>
                    event.target.checked ? [...chosen, type] : chosen.filter((t) => t !== type),
                  )
                }
              />
              <code>{type}</code>
            </label>
          ))}
        </fieldset>
        <fieldset>
          <legend>Signing secret</legend>
          <label className="check">
            <input
              type="radio"
              name="secret-mode"
              checked={secretMode === 'generate'}
              onChange={() => setSecretMode('generate')}
            />
            Generate one (shown once, after creating)
          </label>
          <label className="check">
            <input
              type="radio"
              name="secret-mode"
              checked={secretMode === 'given'}
              onChange={() => setSecretMode('given')}
            />
            Use my own
          </label>
          {secretMode === 'given' ? (
            <Field label="Secret">
              <input
                type="password"
                autoComplete="off"
                required
                value={givenSecret}
                onChange={(event) => setGivenSecret(event.target.value)}
              />
            </Field>
          ) : null}
          <label className="check">
            <input
              type="radio"
              name="secret-mode"
              checked={secretMode === 'none'}
              onChange={() => setSecretMode('none')}
            />
            No secret (deliveries are not signed)
          </label>
        </fieldset>
        <label className="check">
          <input type="checkbox" checked={ordered} onChange={(event) => setOrdered(event.target.checked)} />
          Ordered: the events of one conversation arrive in the order they happened
        </label>
        <Field label="Max deliveries per second" hint="Empty: no limit">
          <input
            type="number"
            min={1}
            max={10000}
            value={maxPerSecond}
            onChange={(event) => setMaxPerSecond(event.target.value)}
          />
        </Field>
        <button type="submit" disabled={create.busy || (!all && events.length === 0)}>
          Create webhook
        </button>
      </form>
      <ErrorNote error={create.error} />
      {shownSecret ? (
        <SecretOnce
          label="Signing secret"
          value={shownSecret}
          note="Give it to your receiver to check the signatures. This is the only time it is shown."
        />
      ) : null}
    </section>
  );
}

/** Settings → Webhooks: the endpoints, and a form for a new one. */
export function Webhooks({ workspaceId }: { workspaceId: string }) {
  const { client } = useSession();
  const webhooks = useResource(`webhooks:${workspaceId}`, () =>
    unwrap(
      client.GET('/admin/v1/workspaces/{workspace_id}/webhooks', {
        params: { path: { workspace_id: workspaceId } },
      }),
    ),
  );
  return (
    <main className="page">
      <h1>Settings → Webhooks</h1>
      <section className="card">
        <h2>Endpoints</h2>
        <Loaded
          what="webhooks"
          resource={webhooks}
          isEmpty={(data) => data.webhooks.length === 0}
          empty="No webhook yet: events reach your systems once you add one."
        >
          {(data) => (
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">URL</th>
                  <th scope="col">Events</th>
                  <th scope="col">State</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.webhooks.map((webhook) => (
                  <tr key={webhook.id}>
                    <td data-label="URL">
                      <Link to={`/workspaces/${workspaceId}/settings/webhooks/${webhook.id}`}>
                        {webhook.url}
                      </Link>
                      <div className="muted small">
                        {webhook.ordered ? 'ordered' : 'unordered'}
                        {webhook.max_per_second ? ` · at most ${webhook.max_per_second}/s` : ''}
                        {webhook.has_secret ? ' · signed' : ' · unsigned'}
                      </div>
                    </td>
                    <td data-label="Events">{webhook.events.join(', ')}</td>
                    <td data-label="State">
                      <Badge value={webhook.enabled ? 'enabled' : 'disabled'} />
                      {webhook.disabled_reason ? (
                        <div className="muted small">{webhook.disabled_reason}</div>
                      ) : null}
                    </td>
                    <td className="actions">
                      <Link
                        className="button secondary"
                        to={`/workspaces/${workspaceId}/settings/webhooks/${webhook.id}`}
                      >
                        Delivery log
                      </Link>{' '}
                      <EnableButton
                        webhook={webhook}
                        workspaceId={workspaceId}
                        onChanged={() => void webhooks.reload()}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Loaded>
      </section>
      <NewWebhook workspaceId={workspaceId} onCreated={() => void webhooks.reload()} />
    </main>
  );
}

function Attempts({
  workspaceId,
  webhookId,
  deliveryId,
}: {
  workspaceId: string;
  webhookId: string;
  deliveryId: string;
}) {
  const { client } = useSession();
  const delivery = useResource(
    `delivery:${deliveryId}`,
    () =>
      unwrap(
        client.GET('/admin/v1/workspaces/{workspace_id}/webhooks/{webhook_id}/deliveries/{delivery_id}', {
          params: { path: { workspace_id: workspaceId, webhook_id: webhookId, delivery_id: deliveryId } },
        }),
      ),
    { pollMs: deliveryLogPollMs },
  );
  return (
    <Loaded
      what="the attempts"
      resource={delivery}
      isEmpty={(data) => data.attempts.length === 0}
      empty="Not attempted yet."
    >
      {(data) => (
        <ol className="attempts">
          {data.attempts.map((attempt) => (
            <li key={attempt.attempt} className="attempt">
              <strong>Attempt {attempt.attempt}</strong> · <Time iso={attempt.at} /> ·{' '}
              {attempt.status_code === null ? 'no answer' : `HTTP ${attempt.status_code}`} ·{' '}
              {attempt.duration_ms} ms
              {attempt.error ? <div className="error-text">{attempt.error}</div> : null}
              {attempt.response_body ? (
                <>
                  <span className="visually-hidden">The receiver's answer:</span>
                  <pre className="response">{attempt.response_body}</pre>
                </>
              ) : null}
            </li>
          ))}
        </ol>
      )}
    </Loaded>
  );
}

function DeliveryRow({
  delivery,
  workspaceId,
  webhookId,
  onResent,
}: {
  delivery: Delivery;
  workspaceId: string;
  webhookId: string;
  onResent(): void;
}) {
  const { client } = useSession();
  const [open, setOpen] = useState(false);
  const resend = useAction();
  return (
    <>
      <tr data-event={delivery.event_type} data-status={delivery.status}>
        <td data-label="Event">
          <code>{delivery.event_type}</code>
        </td>
        <td data-label="Status">
          <Badge value={delivery.status} />
        </td>
        <td data-label="Attempts">{delivery.attempt_count}</td>
        <td data-label="Created">
          <Time iso={delivery.created_at} />
        </td>
        <td data-label="Last error">{delivery.last_error ?? '—'}</td>
        <td className="actions">
          <button type="button" className="secondary" aria-expanded={open} onClick={() => setOpen(!open)}>
            {open ? 'Hide attempts' : 'Attempts'}
          </button>{' '}
          <button
            type="button"
            className="secondary"
            disabled={resend.busy}
            onClick={() =>
              resend.run(async () => {
                await unwrap(
                  client.POST(
                    '/admin/v1/workspaces/{workspace_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/resend',
                    {
                      params: {
                        path: { workspace_id: workspaceId, webhook_id: webhookId, delivery_id: delivery.id },
                      },
                    },
                  ),
                );
                onResent();
              })
            }
          >
            Resend
          </button>
          <ErrorNote error={resend.error} />
        </td>
      </tr>
      {open ? (
        <tr className="detail-row">
          <td colSpan={6}>
            <Attempts workspaceId={workspaceId} webhookId={webhookId} deliveryId={delivery.id} />
          </td>
        </tr>
      ) : null}
    </>
  );
}

const localInputValue = (date: Date) =>
  new Date(date.getTime() - date.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);

/** One endpoint: its state, a test event, and its delivery log with resend and replay. */
export function WebhookLog({ workspaceId, webhookId }: { workspaceId: string; webhookId: string }) {
  const { client } = useSession();
  const path = { params: { path: { workspace_id: workspaceId, webhook_id: webhookId } } };
  const webhook = useResource(`webhook:${webhookId}`, () =>
    unwrap(client.GET('/admin/v1/workspaces/{workspace_id}/webhooks/{webhook_id}', path)),
  );
  const deliveries = useResource(
    `deliveries:${webhookId}`,
    () => unwrap(client.GET('/admin/v1/workspaces/{workspace_id}/webhooks/{webhook_id}/deliveries', path)),
    { pollMs: deliveryLogPollMs },
  );
  const test = useAction();
  const replay = useAction();
  const [since, setSince] = useState(() => localInputValue(new Date(Date.now() - 24 * 3_600_000)));
  const [note, setNote] = useState<string>();

  const sendTest = async () => {
    setNote(undefined);
    const delivery = await test.run(() =>
      unwrap(client.POST('/admin/v1/workspaces/{workspace_id}/webhooks/{webhook_id}/test', path)),
    );
    if (delivery) {
      setNote('Test event scheduled: it appears in the log below.');
      await deliveries.reload();
    }
  };
  const replayFailed = async (event: FormEvent) => {
    event.preventDefault();
    setNote(undefined);
    const answer = await replay.run(() =>
      unwrap(
        client.POST('/admin/v1/workspaces/{workspace_id}/webhooks/{webhook_id}/replay', {
          ...path,
          body: { since: new Date(since).toISOString() },
        }),
      ),
    );
    if (answer) {
      setNote(
        `${answer.scheduled} failed ${answer.scheduled === 1 ? 'delivery' : 'deliveries'} scheduled again.`,
      );
      await deliveries.reload();
    }
  };

  return (
    <main className="page">
      <p>
        <Link to={`/workspaces/${workspaceId}/settings/webhooks`}>← All webhooks</Link>
      </p>
      <Loaded what="the webhook" resource={webhook}>
        {(data) => (
          <section className="card">
            <h1 className="break">{data.url}</h1>
            <p>
              <Badge value={data.enabled ? 'enabled' : 'disabled'} /> · events {data.events.join(', ')} ·{' '}
              {data.ordered ? 'ordered' : 'unordered'}
              {data.max_per_second ? ` · at most ${data.max_per_second}/s` : ''}
              {data.failing_since ? (
                <>
                  {' '}
                  · failing since <Time iso={data.failing_since} />
                </>
              ) : null}
            </p>
            {data.disabled_reason ? <p className="warning">{data.disabled_reason}</p> : null}
            <div className="toolbar">
              <button type="button" disabled={test.busy} onClick={sendTest}>
                Send test event
              </button>
              <EnableButton
                webhook={data}
                workspaceId={workspaceId}
                onChanged={() => void webhook.reload()}
              />
            </div>
            <ErrorNote error={test.error} />
          </section>
        )}
      </Loaded>
      <section className="card" aria-labelledby="log-title">
        <h2 id="log-title">Delivery log</h2>
        <p className="muted small">Newest first; refreshed every {deliveryLogPollMs / 1000} s.</p>
        <form className="inline-form" onSubmit={replayFailed}>
          <Field label="Replay failed deliveries since">
            <input
              type="datetime-local"
              required
              value={since}
              onChange={(event) => setSince(event.target.value)}
            />
          </Field>
          <button type="submit" className="secondary" disabled={replay.busy}>
            Replay failed
          </button>
        </form>
        <ErrorNote error={replay.error} />
        {note ? (
          <p className="note" role="status">
            {note}
          </p>
        ) : null}
        <Loaded
          what="deliveries"
          resource={deliveries}
          isEmpty={(data) => data.deliveries.length === 0}
          empty="Nothing delivered yet."
        >
          {(data) => (
            <table className="table" aria-label="Deliveries">
              <thead>
                <tr>
                  <th scope="col">Event</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last error</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.deliveries.map((delivery) => (
                  <DeliveryRow
                    key={delivery.id}
                    delivery={delivery}
                    workspaceId={workspaceId}
                    webhookId={webhookId}
                    onResent={() => void deliveries.reload()}
                  />
                ))}
              </tbody>
            </table>
          )}
        </Loaded>
      </section>
    </main>
  );
}
