// What the page saw, kept in window.__demoStats: for headless tests and for curious people with
// a console open.
import type { InboundAudio, TransportKind } from './call';
import type { TurnState } from './turns';

/** "waiting": the server is full; the page tries again after its countdown. */
export type Connection = 'disconnected' | 'connecting' | 'waiting' | 'connected';

export interface DemoStats {
  transport: TransportKind;
  connection: Connection;
  state: TurnState;
  /** Every state the conversation went through, in order. */
  states: TurnState[];
  audioDeltas: number;
  audioBytes: number;
  outputAudioStarted: number;
  userTranscripts: string[];
  assistantTranscripts: string[];
  tools: { name: string; result: string }[];
  latenciesMs: number[];
  /** Interrupt button presses, and answers whose unplayed audio was then dropped. */
  interruptRequests: number;
  cleared: number;
  /** Timed viseme events received (the server runs with --enable_visemes). */
  visemeEvents: number;
  /** The line shown while the server is full ("busy: …, retrying in 1 s…"; null when none), and how
   * many connection attempts it refused. */
  busy: string | null;
  refusals: number;
  errors: string[];
}

declare global {
  interface Window {
    __demoStats: DemoStats;
    __demo: { inboundAudio(): Promise<InboundAudio | null>; interrupt(): void };
  }
}

export function newStats(transport: TransportKind): DemoStats {
  return {
    transport,
    connection: 'disconnected',
    state: 'idle',
    states: [],
    audioDeltas: 0,
    audioBytes: 0,
    outputAudioStarted: 0,
    userTranscripts: [],
    assistantTranscripts: [],
    tools: [],
    latenciesMs: [],
    interruptRequests: 0,
    cleared: 0,
    visemeEvents: 0,
    busy: null,
    refusals: 0,
    errors: [],
  };
}
