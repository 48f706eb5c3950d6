import type { ReactNode } from 'react';
import { unwrap } from './api';
import { useResource } from './hooks';
import { Link, match, navigate, usePath } from './router';
import { Funnels } from './screens/funnels';
import { Inbox } from './screens/inbox';
import { Integrations } from './screens/integrations';
import { SignIn } from './screens/sign-in';
import { Team } from './screens/team';
import { WebhookLog, Webhooks } from './screens/webhooks';
import { WorkspaceSettings } from './screens/workspace-settings';
import { Workspaces } from './screens/workspaces';
import { SessionGate, useSession } from './session';

const ws = '/workspaces/:ws';

/** The screens of a workspace, in the order of its navigation. */
const sections = [
  { label: 'Inbox', path: 'inbox' },
  { label: 'Funnels', path: 'funnels' },
  { label: 'Integrations', path: 'integrations' },
  { label: 'Team', path: 'team' },
  { label: 'Settings → Workspace', path: 'settings/workspace' },
  { label: 'Settings → Webhooks', path: 'settings/webhooks' },
];

function WorkspaceSwitcher({ current }: { current: string }) {
  const { client } = useSession();
  const workspaces = useResource('workspaces', () => unwrap(client.GET('/admin/v1/workspaces')));
  const list = workspaces.data?.workspaces ?? [];
  return (
    <label className="switcher">
      <span className="visually-hidden">Workspace</span>
      <select value={current} onChange={(event) => navigate(`/workspaces/${event.target.value}/inbox`)}>
        {list.some((w) => w.id === current) ? null : <option value={current}>{current}</option>}
        {list.map((workspace) => (
          <option key={workspace.id} value={workspace.id}>
            {workspace.name} ({workspace.status})
          </option>
        ))}
      </select>
    </label>
  );
}

function Shell({
  workspaceId,
  section,
  children,
}: {
  workspaceId?: string;
  section?: string;
  children: ReactNode;
}) {
  const { signOut } = useSession();
  return (
    <div className="shell">
      <a className="skip-link" href="#content">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/workspaces" className="brand">
          Inbox panel
        </Link>
        {workspaceId ? <WorkspaceSwitcher current={workspaceId} /> : null}
        <nav aria-label="Panel">
          <Link to="/workspaces" aria-current={workspaceId ? undefined : 'page'}>
            Workspaces
          </Link>
          <button type="button" className="link-button" onClick={() => signOut()}>
            Sign out
          </button>
        </nav>
      </header>
      <div className={workspaceId ? 'with-sidebar' : undefined}>
        {workspaceId ? (
          <nav className="sidebar" aria-label="Workspace">
            {sections.map((item) => (
              <Link
                key={item.path}
                to={`/workspaces/${workspaceId}/${item.path}`}
                aria-current={section === item.path ? 'page' : undefined}
              >
                {item.label}
              </Link>
            ))}
          </nav>
        ) : null}
        <div id="content" className="content">
          {children}
        </div>
      </div>
    </div>
  );
}

type Params = Record<string, string>;

/** Each address of the panel: its pattern, the workspace section it belongs to, and what it shows. */
const screens: Array<{ patterns: string[]; section?: string; render(params: Params): ReactNode }> = [
  {
    patterns: [`${ws}/inbox`, `${ws}/inbox/:conversation`],
    section: 'inbox',
    render: (p) => <Inbox workspaceId={p.ws!} conversationId={p.conversation} />,
  },
  {
    patterns: [`${ws}/funnels`, `${ws}/funnels/:pipeline`],
    section: 'funnels',
    render: (p) => <Funnels workspaceId={p.ws!} pipelineId={p.pipeline} />,
  },
  {
    patterns: [`${ws}/integrations`],
    section: 'integrations',
    render: (p) => <Integrations workspaceId={p.ws!} />,
  },
  { patterns: [`${ws}/team`], section: 'team', render: (p) => <Team workspaceId={p.ws!} /> },
  {
    patterns: [`${ws}/settings/workspace`],
    section: 'settings/workspace',
    render: (p) => <WorkspaceSettings workspaceId={p.ws!} />,
  },
  {
    patterns: [`${ws}/settings/webhooks`],
    section: 'settings/webhooks',
    render: (p) => <Webhooks workspaceId={p.ws!} />,
  },
  {
    patterns: [`${ws}/settings/webhooks/:webhook`],
    section: 'settings/webhooks',
    render: (p) => <WebhookLog workspaceId={p.ws!} webhookId={p.webhook!} />,
  },
  { patterns: ['/', '/workspaces', ws], render: () => <Workspaces /> },
];

function Screens() {
  const path = usePath();
  for (const screen of screens) {
    for (const pattern of screen.patterns) {
      const params = match(pattern, path);
      if (!params) continue;
      return (
        <Shell workspaceId={screen.section ? params.ws : undefined} section={screen.section}>
          {screen.render(params)}
        </Shell>
      );
    }
  }
  return (
    <Shell>
      <main className="page">
        <h1>Not found</h1>
        <p>
          The panel has no page at this address. <Link to="/workspaces">Go to the workspaces</Link>.
        </p>
      </main>
    </Shell>
  );
}

export function App() {
  return (
    <SessionGate signIn={(props) => <SignIn {...props} />}>
      <Screens />
    </SessionGate>
  );
}
