import { eventSubject } from '@inbox/contracts';

/**
 * Subject names with an optional prefix, so several test files (or several installations) can share one
 * NATS server without seeing each other's traffic.
 */
export class SubjectNames {
  constructor(readonly prefix = '') {
    if (prefix && !/^[A-Za-z0-9_-]+$/.test(prefix)) throw new Error(`invalid bus prefix "${prefix}"`);
  }
  /** A name under the prefix: NATS subjects here, RabbitMQ exchange and queue names in RabbitNames. */
  withPrefix(subject: string): string {
    return this.prefix ? `${this.prefix}.${subject}` : subject;
  }
  command(subject: string): string {
    return this.withPrefix(subject);
  }
  event(type: string): string {
    return this.withPrefix(eventSubject(type));
  }
  deadLetter(durable: string): string {
    return this.withPrefix(`dlq.${durable}`);
  }
  typeOfEventSubject(subject: string): string {
    return subject.slice(this.withPrefix(eventSubject('')).length);
  }
  get eventsStream(): string {
    return this.prefix ? `${this.prefix}_EVENTS` : 'EVENTS';
  }
  get deadLetterStream(): string {
    return this.prefix ? `${this.prefix}_DEADLETTER` : 'DEADLETTER';
  }
  durable(name: string): string {
    return name.replace(/[^A-Za-z0-9_-]/g, '_');
  }
}

/** NATS wildcard matching: `*` is one token, `>` one or more trailing tokens. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
