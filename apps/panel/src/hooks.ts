import { useCallback, useEffect, useRef, useState } from 'react';
import { messageOf } from './api';
import { useSession } from './session';

export interface Resource<T> {
  data?: T;
  error?: string;
  loading: boolean;
  reload(): Promise<void>;
}

/**
 * Data loaded from the API for what `key` names: loaded again when the key changes, and every `pollMs`
 * while the tab is visible (the interval is cleared when the screen goes). A failed refresh keeps the
 * data already shown beside the error.
 */
export function useResource<T>(key: string, load: () => Promise<T>, { pollMs }: { pollMs?: number } = {}) {
  const { check } = useSession();
  const [state, setState] = useState<{ key: string; data?: T; error?: string; loading: boolean }>({
    key,
    loading: true,
  });
  const loadRef = useRef(load);
  loadRef.current = load;
  const latest = useRef(0);
  const inFlight = useRef(false);

  const fetchNow = useCallback(
    async (forKey: string) => {
      const call = ++latest.current;
      inFlight.current = true;
      try {
        const data = await loadRef.current();
        if (call === latest.current) setState({ key: forKey, data, loading: false });
      } catch (error) {
        check(error);
        if (call === latest.current)
          setState((before) => ({
            key: forKey,
            data: before.key === forKey ? before.data : undefined,
            error: messageOf(error),
            loading: false,
          }));
      } finally {
        if (call === latest.current) inFlight.current = false;
      }
    },
    [check],
  );

  useEffect(() => {
    setState((before) => (before.key === key ? { ...before, loading: true } : { key, loading: true }));
    void fetchNow(key);
  }, [key, fetchNow]);

  useEffect(() => {
    if (!pollMs) return;
    const timer = window.setInterval(() => {
      if (!document.hidden && !inFlight.current) void fetchNow(key);
    }, pollMs);
    return () => window.clearInterval(timer);
  }, [key, pollMs, fetchNow]);

  const shown = state.key === key ? state : { loading: true };
  return { ...shown, reload: () => fetchNow(key) } as Resource<T>;
}

/** Runs what a button or a form asks for, once at a time, keeping its error (the API's text) to show. */
export function useAction() {
  const { check } = useSession();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const run = useCallback(
    async <T>(action: () => Promise<T>): Promise<T | undefined> => {
      setBusy(true);
      setError(undefined);
      try {
        return await action();
      } catch (caught) {
        check(caught);
        setError(messageOf(caught));
        return undefined;
      } finally {
        setBusy(false);
      }
    },
    [check],
  );
  return { run, busy, error, clearError: () => setError(undefined) };
}
