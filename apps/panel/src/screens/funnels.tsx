import { type DragEvent, type FormEvent, type KeyboardEvent, useEffect, useRef, useState } from 'react';
import { type Schemas, unwrap } from '../api';
import { Empty, ErrorNote, Field, Loaded, Time } from '../components';
import { useAction, useResource } from '../hooks';
import { Link, navigate } from '../router';
import { useSession } from '../session';

type Pipeline = Schemas['Pipeline'];
type Card = Schemas['PipelineContact'];
/** Contacts of channels without phone numbers may have neither a phone nor, rarely, a name. */
const cardLabel = (card: Card) => card.name ?? card.phone ?? 'unnamed contact';

/** How often an open board asks for cards moved elsewhere (the public API, another operator). */
export const boardPollMs = 5_000;

function NewPipeline({ workspaceId, onCreated }: { workspaceId: string; onCreated(id: string): void }) {
  const { client } = useSession();
  const [name, setName] = useState('');
  const [stages, setStages] = useState([
    { key: '', name: '' },
    { key: '', name: '' },
  ]);
  const create = useAction();
  const setStage = (index: number, field: 'key' | 'name', value: string) =>
    setStages((was) => was.map((stage, i) => (i === index ? { ...stage, [field]: value } : stage)));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const created = await create.run(() =>
      unwrap(
        client.POST('/admin/v1/workspaces/{workspace_id}/pipelines', {
          params: { path: { workspace_id: workspaceId } },
          body: { name, stages: stages.filter((stage) => stage.key.trim() || stage.name.trim()) },
        }),
      ),
    );
    if (!created) return;
    setName('');
    setStages([
      { key: '', name: '' },
      { key: '', name: '' },
    ]);
    onCreated(created.id);
  };

  return (
    <form className="stack-form card" onSubmit={submit} aria-labelledby="new-pipeline-title">
      <h2 id="new-pipeline-title">New funnel</h2>
      <Field label="Name">
        <input value={name} onChange={(event) => setName(event.target.value)} />
      </Field>
      <fieldset>
        <legend>Stages, in order</legend>
        {stages.map((stage, index) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: rows are only ever appended, never reordered
          <div className="inline-form" key={index}>
            <Field label={`Stage ${index + 1} key`}>
              <input value={stage.key} onChange={(event) => setStage(index, 'key', event.target.value)} />
            </Field>
            <Field label={`Stage ${index + 1} name`}>
              <input value={stage.name} onChange={(event) => setStage(index, 'name', event.target.value)} />
            </Field>
          </div>
        ))}
        <button
          type="button"
          className="secondary"
          onClick={() => setStages((was) => [...was, { key: '', name: '' }])}
        >
          Add a stage
        </button>
      </fieldset>
      <button type="submit" disabled={create.busy}>
        Create funnel
      </button>
      <ErrorNote error={create.error} />
    </form>
  );
}

function AddStage({
  workspaceId,
  pipeline,
  onAdded,
}: {
  workspaceId: string;
  pipeline: Pipeline;
  onAdded(): void;
}) {
  const { client } = useSession();
  const [key, setKey] = useState('');
  const [name, setName] = useState('');
  const add = useAction();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const added = await add.run(() =>
      unwrap(
        client.POST('/admin/v1/workspaces/{workspace_id}/pipelines/{pipeline_id}/stages', {
          params: { path: { workspace_id: workspaceId, pipeline_id: pipeline.id } },
          body: { key, name },
        }),
      ),
    );
    if (!added) return;
    setKey('');
    setName('');
    onAdded();
  };
  return (
    <form className="inline-form" onSubmit={submit} aria-label="Add a stage">
      <Field label="New stage key">
        <input value={key} onChange={(event) => setKey(event.target.value)} />
      </Field>
      <Field label="New stage name">
        <input value={name} onChange={(event) => setName(event.target.value)} />
      </Field>
      <button type="submit" className="secondary" disabled={add.busy}>
        Add stage
      </button>
      <ErrorNote error={add.error} />
    </form>
  );
}

/**
 * A funnel as a Kanban board: a column per stage, a card per contact. A card moves by drag and drop, or
 * from the keyboard (focus it, then ← or →); either way the panel performs the lead move.
 */
function Board({
  workspaceId,
  pipeline,
  onMoved,
}: {
  workspaceId: string;
  pipeline: Pipeline;
  onMoved(): void;
}) {
  const { client } = useSession();
  const cards = useResource(
    `board:${pipeline.id}`,
    () =>
      unwrap(
        client.GET('/admin/v1/workspaces/{workspace_id}/pipelines/{pipeline_id}/contacts', {
          params: { path: { workspace_id: workspaceId, pipeline_id: pipeline.id } },
        }),
      ),
    { pollMs: boardPollMs },
  );
  const move = useAction();
  const [pending, setPending] = useState<Record<string, string>>({});
  const [dropTarget, setDropTarget] = useState<string>();
  const [announcement, setAnnouncement] = useState('');
  const focusAfterMove = useRef<string | undefined>(undefined);
  const stages = pipeline.stages_config;

  useEffect(() => {
    if (!focusAfterMove.current) return;
    document.querySelector<HTMLElement>(`[data-card="${focusAfterMove.current}"]`)?.focus();
  });

  const moveCard = async (card: Card, stage: string) => {
    if (stage === (pending[card.id] ?? card.stage)) return;
    const label = cardLabel(card);
    const stageName = stages.find((s) => s.key === stage)?.name ?? stage;
    setPending((was) => ({ ...was, [card.id]: stage }));
    const moved = await move.run(() =>
      unwrap(
        client.PUT('/admin/v1/workspaces/{workspace_id}/pipelines/{pipeline_id}/contacts/{contact_id}', {
          params: { path: { workspace_id: workspaceId, pipeline_id: pipeline.id, contact_id: card.id } },
          body: { stage },
        }),
      ),
    );
    await cards.reload();
    setPending(({ [card.id]: _, ...rest }) => rest);
    if (moved) setAnnouncement(`${label} moved to ${stageName}.`);
    onMoved();
  };

  const onKey = (card: Card, event: KeyboardEvent<HTMLElement>) => {
    const at = stages.findIndex((s) => s.key === (pending[card.id] ?? card.stage));
    const to = event.key === 'ArrowRight' ? at + 1 : event.key === 'ArrowLeft' ? at - 1 : -1;
    if (to < 0 || to >= stages.length || (event.key !== 'ArrowRight' && event.key !== 'ArrowLeft')) return;
    event.preventDefault();
    focusAfterMove.current = card.id;
    void moveCard(card, stages[to]!.key);
  };
  const onDrop = (stage: string, event: DragEvent<HTMLElement>) => {
    event.preventDefault();
    setDropTarget(undefined);
    const id = event.dataTransfer.getData('text/plain');
    const card = cards.data?.contacts.find((c) => c.id === id);
    if (card) void moveCard(card, stage);
  };

  return (
    <>
      <p className="muted small" id="board-help">
        Drag a card to another stage, or focus it and press ← or → to move it one stage. The board refreshes
        every {boardPollMs / 1000} s.
      </p>
      <ErrorNote error={move.error} />
      <p className="visually-hidden" role="status" aria-live="polite">
        {announcement}
      </p>
      <Loaded what="the board" resource={cards}>
        {(data) => (
          <div className="board">
            {stages.map((stage) => {
              const inStage = data.contacts.filter((card) => (pending[card.id] ?? card.stage) === stage.key);
              return (
                <section
                  key={stage.key}
                  className={`column${dropTarget === stage.key ? ' drop-target' : ''}`}
                  aria-label={stage.name}
                  data-stage={stage.key}
                  onDragOver={(event) => {
                    event.preventDefault();
                    event.dataTransfer.dropEffect = 'move';
                    setDropTarget(stage.key);
                  }}
                  onDragLeave={() => setDropTarget((was) => (was === stage.key ? undefined : was))}
                  onDrop={(event) => onDrop(stage.key, event)}
                >
                  <h3>
                    {stage.name} <span className="count">{stage.contacts}</span>
                  </h3>
                  <p className="muted small">{stage.key}</p>
                  {inStage.length === 0 ? <p className="empty small">No contact here.</p> : null}
                  <ul className="cards">
                    {inStage.map((card) => (
                      <li
                        key={card.id}
                        className={`lead-card${pending[card.id] ? ' moving' : ''}`}
                        data-card={card.id}
                        aria-busy={pending[card.id] !== undefined}
                        draggable
                        // biome-ignore lint/a11y/noNoninteractiveTabindex: a card is focusable so that the keyboard can move it
                        tabIndex={0}
                        aria-describedby="board-help"
                        aria-label={`${cardLabel(card)}, in ${stage.name}`}
                        onDragStart={(event) => {
                          event.dataTransfer.setData('text/plain', card.id);
                          event.dataTransfer.effectAllowed = 'move';
                        }}
                        onKeyDown={(event) => onKey(card, event)}
                        onBlur={() => {
                          if (focusAfterMove.current === card.id && !pending[card.id])
                            focusAfterMove.current = undefined;
                        }}
                      >
                        <strong>{cardLabel(card)}</strong>
                        {card.name && card.phone ? <span className="muted small">{card.phone}</span> : null}
                        <span className="muted small">
                          since <Time iso={card.moved_at} />
                        </span>
                      </li>
                    ))}
                  </ul>
                </section>
              );
            })}
          </div>
        )}
      </Loaded>
    </>
  );
}

/** Funnels: the pipelines of the workspace, one board at a time, and forms for new ones and new stages. */
export function Funnels({ workspaceId, pipelineId }: { workspaceId: string; pipelineId?: string }) {
  const { client } = useSession();
  const pipelines = useResource(`pipelines:${workspaceId}`, () =>
    unwrap(
      client.GET('/admin/v1/workspaces/{workspace_id}/pipelines', {
        params: { path: { workspace_id: workspaceId } },
      }),
    ),
  );
  const list = pipelines.data?.pipelines ?? [];
  const shown = list.find((p) => p.id === pipelineId) ?? list[0];
  return (
    <main className="page">
      <h1>Funnels</h1>
      <Loaded
        what="funnels"
        resource={pipelines}
        isEmpty={(data) => data.pipelines.length === 0}
        empty="No funnel yet: create the first one below."
      >
        {(data) => (
          <>
            <nav className="tabs" aria-label="Funnels">
              {data.pipelines.map((pipeline) => (
                <Link
                  key={pipeline.id}
                  to={`/workspaces/${workspaceId}/funnels/${pipeline.id}`}
                  aria-current={pipeline.id === shown?.id ? 'page' : undefined}
                >
                  {pipeline.name}
                </Link>
              ))}
            </nav>
            {shown ? (
              <section className="card" aria-label={`Board of ${shown.name}`}>
                <h2>{shown.name}</h2>
                <Board workspaceId={workspaceId} pipeline={shown} onMoved={() => void pipelines.reload()} />
                <AddStage
                  workspaceId={workspaceId}
                  pipeline={shown}
                  onAdded={() => void pipelines.reload()}
                />
              </section>
            ) : (
              <Empty>Choose a funnel.</Empty>
            )}
          </>
        )}
      </Loaded>
      <NewPipeline
        workspaceId={workspaceId}
        onCreated={async (id) => {
          await pipelines.reload();
          navigate(`/workspaces/${workspaceId}/funnels/${id}`);
        }}
      />
    </main>
  );
}
