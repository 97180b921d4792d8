// Readable text and plain values from what the SDK, the browser and the server report.
import type { TransportEvent } from '@openai/agents/realtime';

/** A readable line from whatever the SDK, the browser or the server reported. */
export function describe(error: unknown, transport: string): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth += 1) {
    const { message } = current as { message?: unknown };
    if (typeof message === 'string' && message) return message;
    current = (current as { error?: unknown }).error;
  }
  if (typeof current === 'string' && current) return current;
  if (error instanceof Event) return `${error.type} on the ${transport} connection`;
  return String(error);
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

export interface ResponseSummary {
  id: string;
  status: string;
  output: { type?: string; content?: { type?: string }[] }[];
}

export function responseOf(event: TransportEvent): ResponseSummary {
  const response = ((event as Record<string, unknown>).response ?? {}) as Partial<ResponseSummary>;
  return { id: response.id ?? '', status: response.status ?? '', output: response.output ?? [] };
}

export function callIdOf(toolCall: unknown): string {
  const call = toolCall as { callId?: string; id?: string };
  return call.callId ?? call.id ?? '';
}

export function argumentsOf(toolCall: unknown): string {
  const call = toolCall as { arguments?: string };
  return call.arguments ?? '{}';
}
