// What the conversation is doing now, and how long each answer took to start.
//
// Latency of a turn: from input_audio_buffer.speech_stopped (the server decided the user's turn
// ended) to the first sound of the answer as this page sees it: the first
// response.output_audio.delta received (WebSocket), or output_audio_buffer.started (WebRTC: the
// server began sending the answer's RTP). A tool call in between is part of the wait.

export type TurnState = 'idle' | 'listening' | 'user' | 'thinking' | 'tool' | 'speaking';

export class TurnTracker {
  state: TurnState = 'idle';
  readonly latenciesMs: number[] = [];
  private speechStoppedAt: number | undefined;
  private readonly withAudio = new Set<string>();
  private readonly open = new Set<string>();
  private playing = false;

  constructor(private readonly onChange: (state: TurnState) => void) {}

  connected(): void {
    this.set('listening');
  }

  disconnected(): void {
    this.speechStoppedAt = undefined;
    this.open.clear();
    this.playing = false;
    this.set('idle');
  }

  speechStarted(): void {
    this.speechStoppedAt = undefined;
    this.set('user');
  }

  speechStopped(at: number): void {
    this.speechStoppedAt = at;
    this.set('thinking');
  }

  /** The user's words came back empty: no answer is coming for them. */
  nothingHeard(): void {
    if (this.state === 'thinking' && this.open.size === 0) {
      this.speechStoppedAt = undefined;
      this.set('listening');
    }
  }

  responseCreated(responseId: string): void {
    this.open.add(responseId);
    if (this.state === 'listening') this.set('thinking');
  }

  toolStarted(): void {
    this.set('tool');
  }

  toolEnded(): void {
    if (this.state === 'tool') this.set('thinking');
  }

  /** The first sound of response `responseId`; returns the turn's latency if a user turn just ended. */
  firstAudio(responseId: string, at: number): number | undefined {
    if (this.withAudio.has(responseId)) return undefined;
    this.withAudio.add(responseId);
    this.playing = true;
    if (this.state !== 'user') this.set('speaking');
    if (this.speechStoppedAt === undefined) return undefined;
    const latency = Math.max(0, at - this.speechStoppedAt);
    this.speechStoppedAt = undefined;
    this.latenciesMs.push(latency);
    return latency;
  }

  /**
   * A response ended. The wait goes on after a tool call (another response follows) and for audio
   * not yet started (WebRTC: the server paces it out after the response is complete).
   */
  responseDone(responseId: string, calledTool: boolean, hasAudio: boolean): void {
    this.open.delete(responseId);
    if (calledTool || (hasAudio && !this.withAudio.has(responseId))) return;
    if (!this.playing && (this.state === 'thinking' || this.state === 'speaking')) this.set('listening');
  }

  /** The answer's audio stopped playing (drained, cleared or interrupted). */
  playbackEnded(): void {
    this.playing = false;
    if (this.state === 'speaking' && this.open.size === 0) this.set('listening');
  }

  private set(state: TurnState): void {
    if (state === this.state) return;
    this.state = state;
    this.onChange(state);
  }
}

export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}
