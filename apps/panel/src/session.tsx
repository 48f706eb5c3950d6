import { createContext, type ReactNode, useCallback, useContext, useMemo, useState } from 'react';
import { type AdminClient, type ApiError, adminClient } from './api';

// The token lives in this tab's session storage only: never in the URL, gone when the tab closes.
const storageKey = 'inbox-panel.admin-token';

export const readToken = () => window.sessionStorage.getItem(storageKey);

interface Session {
  client: AdminClient;
  signOut(reason?: string): void;
  /** Signs out when the gateway no longer takes the token; for every failed call. */
  check(error: unknown): void;
}

const SessionContext = createContext<Session | undefined>(undefined);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in panel');
  return session;
}

export function SessionGate({
  signIn,
  children,
}: {
  signIn: (props: { onSignedIn(token: string): void; notice?: string }) => ReactNode;
  children: ReactNode;
}) {
  const [token, setToken] = useState(readToken);
  const [notice, setNotice] = useState<string>();
  const signOut = useCallback((reason?: string) => {
    window.sessionStorage.removeItem(storageKey);
    setNotice(reason);
    setToken(null);
  }, []);
  const session = useMemo<Session | undefined>(
    () =>
      token
        ? {
            client: adminClient(token),
            signOut,
            check: (error) => {
              if ((error as ApiError | undefined)?.status === 401) signOut((error as ApiError).message);
            },
          }
        : undefined,
    [token, signOut],
  );
  if (!session) {
    return signIn({
      notice,
      onSignedIn: (accepted) => {
        window.sessionStorage.setItem(storageKey, accepted);
        setNotice(undefined);
        setToken(accepted);
      },
    });
  }
  return <SessionContext.Provider value={session}>{children}</SessionContext.Provider>;
}
