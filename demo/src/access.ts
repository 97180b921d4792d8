// The API key a server started with --api_key asks for, and why a connection was refused.
//
// The key goes the way OpenAI's browser clients send it (the SDK's useInsecureApiKey): as the
// `openai-insecure-api-key.KEY` WebSocket subprotocol (a page cannot set headers on a WebSocket)
// and as `Authorization: Bearer KEY` on the WebRTC offer. A server without a key ignores both.

/** What the page sends when no key is typed in: the SDK wants one, a server without a key ignores it. */
const PLACEHOLDER_KEY = 'speech-to-speech-needs-no-key';

export function keyToSend(typed: string): string {
  return typed.trim() || PLACEHOLDER_KEY;
}

/**
 * Why the server refused a connection, when the browser would not say: a WebSocket whose handshake
 * was refused (401 or 403) reports only "error". Asks an HTTP route with the same credentials,
 * whose status a page can read; null when that route lets the page in (the cause is elsewhere).
 */
export async function accessProblem(typed: string): Promise<string | null> {
  const key = typed.trim();
  let status: number;
  try {
    const response = await fetch(new URL('../v1/models', location.href), {
      headers: key ? { Authorization: `Bearer ${key}` } : {},
      cache: 'no-store',
    });
    status = response.status;
  } catch {
    return null; // the server cannot be reached at all: the original error says more
  }
  if (status === 401) {
    return key
      ? 'the server did not accept this API key.'
      : 'the server needs an API key: type it into the API key field and connect again.';
  }
  if (status === 403) return 'the server does not accept pages from this origin (see --allowed_origins).';
  return null;
}
