import { type AnchorHTMLAttributes, type MouseEvent, useEffect, useState } from 'react';

/** Everything the panel shows lives under this path of the gateway. */
export const base = '/panel';

const listeners = new Set<() => void>();
const current = () => window.location.pathname.slice(base.length).replace(/^\/*/, '/');

export function navigate(to: string, { replace = false } = {}) {
  const url = `${base}${to}`;
  if (replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
  for (const listener of listeners) listener();
}

/** The path below /panel, e.g. `/workspaces/…/inbox`; follows links and the browser's back and forward. */
export function usePath(): string {
  const [path, setPath] = useState(current);
  useEffect(() => {
    const update = () => setPath(current());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return path;
}

/** The parts of `path` that `pattern`'s `:name`s stand for, or undefined when it does not match. */
export function match(pattern: string, path: string): Record<string, string> | undefined {
  const wanted = pattern.replace(/\/$/, '').split('/');
  const given = path.replace(/\/$/, '').split('/');
  if (wanted.length !== given.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, part] of wanted.entries()) {
    if (part.startsWith(':')) params[part.slice(1)] = decodeURIComponent(given[i]!);
    else if (part !== given[i]) return undefined;
  }
  return params;
}

/** A real link (it opens in a new tab, the address can be copied) that moves within the panel. */
export function Link({ to, ...props }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    props.onClick?.(event);
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey)
      return;
    event.preventDefault();
    navigate(to);
  };
  return <a {...props} href={`${base}${to}`} onClick={follow} />;
}
