import { type FormEvent, useState } from 'react';
import { adminClient, messageOf, unwrap } from '../api';
import { ErrorNote, Field } from '../components';

/** The operator signs in with the gateway's admin token, checked by asking for the workspaces. */
export function SignIn({ onSignedIn, notice }: { onSignedIn(token: string): void; notice?: string }) {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(notice);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await unwrap(adminClient(token.trim()).GET('/admin/v1/workspaces'));
      onSignedIn(token.trim());
    } catch (caught) {
      setError(messageOf(caught));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="sign-in">
      <form onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Inbox panel</h1>
        <p className="muted">
          Sign in with the platform's admin token (the gateway's <code>ADMIN_TOKEN</code>;{' '}
          <code>npm start</code> prints it). It stays in this browser tab only.
        </p>
        {/* For password managers: the token belongs to the platform's operator. */}
        <input type="text" name="username" autoComplete="username" value="admin" readOnly hidden />
        <Field label="Admin token">
          <input
            type="password"
            name="admin-token"
            autoComplete="current-password"
            required
            value={token}
            onChange={(event) => setToken(event.target.value)}
          />
        </Field>
        <ErrorNote error={error} />
        <button type="submit" disabled={busy || token.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
