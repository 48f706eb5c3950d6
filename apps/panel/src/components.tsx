import { cloneElement, type ReactElement, type ReactNode, useId, useState } from 'react';
import type { Resource } from './hooks';

export function ErrorNote({ error }: { error?: string }) {
  if (!error) return null;
  return (
    <p className="error" role="alert">
      {error}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="empty">{children}</p>;
}

/** A resource as a screen shows it: its data, or that it loads, failed (the API's text) or holds nothing. */
export function Loaded<T>({
  what,
  resource,
  isEmpty,
  empty,
  children,
}: {
  what: string;
  resource: Resource<T>;
  isEmpty?: (data: T) => boolean;
  empty?: ReactNode;
  children: (data: T) => ReactNode;
}) {
  const { data, error, loading } = resource;
  return (
    <>
      <ErrorNote error={error} />
      {data === undefined ? (
        loading ? (
          <Loading what={what} />
        ) : null
      ) : isEmpty?.(data) ? (
        <Empty>{empty}</Empty>
      ) : (
        children(data)
      )}
    </>
  );
}

async function copyText(text: string) {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    // Where the Clipboard API is not granted, the older way still copies a selection.
    const area = document.createElement('textarea');
    area.value = text;
    document.body.append(area);
    area.select();
    document.execCommand('copy');
    area.remove();
  }
}

/** "Copy", named for a screen reader by what it copies ("Copy API key"). */
export function CopyButton({ text, what }: { text: string; what: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      className="secondary"
      onClick={async () => {
        await copyText(text);
        setCopied(true);
      }}
    >
      {copied ? 'Copied' : 'Copy'}
      <span className="visually-hidden"> {what}</span>
    </button>
  );
}

/** A secret the API shows once (an API key, a webhook secret): displayed with a copy button and a warning. */
export function SecretOnce({ label, value, note }: { label: string; value: string; note: string }) {
  return (
    <section className="secret" aria-label={label}>
      <h3>{label}</h3>
      <p className="secret-value">
        <code data-testid="secret-value">{value}</code>
        <CopyButton text={value} what={label} />
      </p>
      <p className="warning">{note}</p>
    </section>
  );
}

export function Badge({ value }: { value: string }) {
  return <span className={`badge badge-${value.replace(/[^a-z]/gi, '-')}`}>{value}</span>;
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span className="muted">—</span>;
  const date = new Date(iso);
  return (
    <time dateTime={iso} title={iso}>
      {date.toLocaleString()}
    </time>
  );
}

/** A labelled control; its hint is told to screen readers as the control's description, not its name. */
export function Field({
  label,
  hint,
  children,
}: {
  label: string;
  hint?: ReactNode;
  children: ReactElement;
}) {
  const hintId = useId();
  return (
    <div className="field">
      {/* biome-ignore lint/a11y/noLabelWithoutControl: the control is the child each form passes in */}
      <label>
        <span className="field-label">{label}</span>
        {hint
          ? cloneElement(children as ReactElement<{ 'aria-describedby'?: string }>, {
              'aria-describedby': hintId,
            })
          : children}
      </label>
      {hint ? (
        <span className="hint" id={hintId}>
          {hint}
        </span>
      ) : null}
    </div>
  );
}
