// One connection to the server this page came from: a stock RealtimeSession over the SDK's own
// WebRTC or WebSocket transport, the microphone, and (WebSocket) the page's own PCM playback.
// It is open once the server sent session.created; a server that cannot take the session now
// says so before that, and opening fails with a ServerRefused (refusal.ts).
import {
  OpenAIRealtimeWebRTC,
  OpenAIRealtimeWebSocket,
  type RealtimeAgent,
  RealtimeSession,
} from '@openai/agents/realtime';

import { keyToSend } from './access';
import { AudioEngine, openMicrophone, type PlaybackListener } from './audio';
import { VISEMES_EXTENSION } from './mouth';
import { refusalIn, ServerRefused } from './refusal';

export type TransportKind = 'webrtc' | 'websocket';

const MODEL = 'speech-to-speech';

export interface InboundAudio {
  bytesReceived: number;
  packetsReceived: number;
  totalAudioEnergy: number;
}

export interface CallOptions {
  kind: TransportKind;
  /** What the API key field holds ('' when empty). */
  apiKey: string;
  agent: RealtimeAgent;
  remoteAudio: HTMLAudioElement;
  onPlayback: PlaybackListener;
  /** Subscribe to the session's events; runs before it connects, so nothing is missed. */
  listen: (call: Call) => void;
}

export class Call {
  /** Set by close(): a disconnect from here on was asked for. */
  closing = false;

  private constructor(
    readonly kind: TransportKind,
    readonly session: RealtimeSession,
    readonly transport: OpenAIRealtimeWebRTC | OpenAIRealtimeWebSocket,
    private readonly microphone: MediaStream,
    readonly audio: AudioEngine,
    private readonly remoteAudio: HTMLAudioElement,
  ) {}

  static async open(options: CallOptions): Promise<Call> {
    const { kind } = options;
    const microphone = await openMicrophone();
    let audio: AudioEngine | undefined;
    let session: RealtimeSession | undefined;
    let call: Call | undefined;
    try {
      audio = await AudioEngine.start(
        microphone,
        kind === 'websocket'
          ? { onMicFrame: (pcm) => session?.sendAudio(pcm), onPlayback: options.onPlayback }
          : {},
      );
      const { websocketUrl, callsUrl } = endpoints();
      const transport =
        kind === 'webrtc'
          ? new OpenAIRealtimeWebRTC({
              baseUrl: callsUrl,
              useInsecureApiKey: true,
              mediaStream: microphone,
              audioElement: options.remoteAudio,
            })
          : new OpenAIRealtimeWebSocket({ url: websocketUrl, useInsecureApiKey: true });
      session = new RealtimeSession(options.agent, { transport, model: MODEL });
      call = new Call(kind, session, transport, microphone, audio, options.remoteAudio);
      const started = call.started();
      started.catch(() => undefined); // awaited below, unless connect() fails first
      options.listen(call);
      try {
        await session.connect({ apiKey: keyToSend(options.apiKey), url: kind === 'webrtc' ? callsUrl : websocketUrl });
      } catch (error) {
        const refusal = refusalIn(error);
        throw refusal ? new ServerRefused(refusal) : error;
      }
      await started;
      // Ask for the visemes extension; a server without --enable_visemes just never sends them.
      transport.sendEvent({ type: 'session.update', session: { type: 'realtime', extensions: [VISEMES_EXTENSION] } });
      return call;
    } catch (error) {
      if (call) call.closing = true;
      try {
        session?.close();
      } catch {
        // it never opened
      }
      audio?.close();
      for (const track of microphone.getTracks()) track.stop();
      throw error;
    }
  }

  close(): void {
    this.closing = true;
    try {
      this.session.close();
    } finally {
      this.audio.close();
      for (const track of this.microphone.getTracks()) track.stop();
      this.remoteAudio.srcObject = null;
    }
  }

  async inboundAudio(): Promise<InboundAudio | null> {
    if (!(this.transport instanceof OpenAIRealtimeWebRTC)) return null;
    const connection = this.transport.connectionState.peerConnection;
    if (!connection) return null;
    for (const report of (await connection.getStats()).values()) {
      if (report.type === 'inbound-rtp' && report.kind === 'audio') {
        return {
          bytesReceived: report.bytesReceived ?? 0,
          packetsReceived: report.packetsReceived ?? 0,
          totalAudioEnergy: report.totalAudioEnergy ?? 0,
        };
      }
    }
    return null;
  }

  /** Resolves at session.created; rejects when the connection closes first (ServerRefused if it said why). */
  private started(): Promise<void> {
    return new Promise((resolve, reject) => {
      let refused: ServerRefused | undefined;
      this.session.on('transport_event', (event) => {
        if (event.type === 'session.created') resolve();
        const refusal = event.type === 'error' ? refusalIn(event) : null;
        if (refusal) refused ??= new ServerRefused(refusal);
      });
      this.transport.on('connection_change', (status) => {
        if (status === 'disconnected') reject(refused ?? new Error('the server closed the connection'));
      });
    });
  }
}

function endpoints(): { websocketUrl: string; callsUrl: string } {
  // Relative to the page (/demo/), so a server behind a path prefix works too.
  const calls = new URL('../v1/realtime/calls', location.href);
  const websocket = new URL('../v1/realtime', location.href);
  websocket.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return { websocketUrl: websocket.href, callsUrl: calls.href };
}
