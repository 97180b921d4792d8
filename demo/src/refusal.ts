// A server that cannot take a session now says why and when to try again (docs/security.md,
// "When the server is full"):
//
//   WebSocket  the socket opens, an `error` event (code session_limit_reached or too_many_sessions,
//              `retry_after_s`) comes, then a close with 1013: a page cannot read the HTTP status of a
//              refused handshake, so the server tells a browser this way.
//   WebRTC     POST /v1/realtime/calls answers 503 (or 429) with Retry-After; the SDK passes on only
//              "…failed with status 503: <the server's message>", whose message ends "; try again in N s".

/** What the server said, without its retry hint ("busy: 1 of 1 sessions in use"), and when to retry. */
export interface Refusal {
  reason: string;
  retryAfterS: number;
}

/** Thrown by a connection attempt the server turned down for now. */
export class ServerRefused extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.reason);
    this.name = 'ServerRefused';
  }
}

const CODES = new Set(['session_limit_reached', 'too_many_sessions']);
const STATUS = /status (?:503|429)\b:?\s*([\s\S]*)$/;
const HINT = /^([\s\S]*?);\s*try again in (\d+(?:\.\d+)?) s\.?$/;
/** When a refusal carries no hint a page can read. */
const DEFAULT_RETRY_S = 2;

/**
 * The refusal in whatever the SDK or the server reported: a server `error` event (maybe wrapped in
 * the SDK's `{type: 'error', error}`), the SDK's error for a refused WebRTC offer, or a ServerRefused.
 */
export function refusalIn(value: unknown): Refusal | null {
  let current: unknown = value;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth += 1) {
    if (current instanceof ServerRefused) return current.refusal;
    const { code, message, retry_after_s: retryAfterS } = current as Record<string, unknown>;
    if (typeof code === 'string' && CODES.has(code)) {
      return fromMessage(typeof message === 'string' ? message : code, numberOrUndefined(retryAfterS));
    }
    const status = typeof message === 'string' ? STATUS.exec(message) : null;
    if (status) return fromMessage(status[1] || 'the server is busy', undefined);
    current = (current as { error?: unknown }).error;
  }
  return null;
}

function fromMessage(message: string, retryAfterS: number | undefined): Refusal {
  const hint = HINT.exec(message.trim());
  const reason = hint ? hint[1] : message.trim();
  const seconds = retryAfterS ?? (hint ? Number(hint[2]) : DEFAULT_RETRY_S);
  return { reason, retryAfterS: Math.max(1, Math.ceil(seconds)) };
}

function numberOrUndefined(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** Shows "<reason>, retrying in N s…", counts down each second, then runs `retry`. */
export class RetryCountdown {
  private timer: number | undefined;

  constructor(private readonly show: (text: string | null) => void) {}

  get waiting(): boolean {
    return this.timer !== undefined;
  }

  start(refusal: Refusal, retry: () => void): void {
    this.cancel();
    let left = refusal.retryAfterS;
    this.show(`${refusal.reason}, retrying in ${left} s…`);
    this.timer = window.setInterval(() => {
      left -= 1;
      if (left > 0) {
        this.show(`${refusal.reason}, retrying in ${left} s…`);
        return;
      }
      this.stop();
      this.show(`${refusal.reason}, retrying now…`);
      retry();
    }, 1000);
  }

  /** Stop counting and hide the line. */
  cancel(): void {
    this.stop();
    this.show(null);
  }

  private stop(): void {
    window.clearInterval(this.timer);
    this.timer = undefined;
  }
}
