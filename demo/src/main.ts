// The demo page: a stock @openai/agents RealtimeSession talking to the speech-to-speech server
// this page was served from, over the SDK's own WebRTC or WebSocket transport.
//
//   /demo                                        pick a transport, press Connect
//   /demo?autoconnect=1&transport=webrtc         connect on load (kiosks, tests)
//
// The server needs no API key; browsers still make the SDK refuse a plain key unless
// `useInsecureApiKey` is set, so the page sends a placeholder that way.
import {
  OpenAIRealtimeWebRTC,
  OpenAIRealtimeWebSocket,
  RealtimeAgent,
  RealtimeSession,
  type TransportEvent,
} from '@openai/agents/realtime';

import { AudioEngine, openMicrophone } from './audio';
import { Mouth, VISEMES_EXTENSION, type VisemesEvent } from './mouth';
import { getLocalTime } from './tools';
import { TranscriptView } from './transcript';
import { median, TurnTracker, type TurnState } from './turns';

type TransportKind = 'webrtc' | 'websocket';
type Connection = 'disconnected' | 'connecting' | 'connected';

const PLACEHOLDER_KEY = 'speech-to-speech-needs-no-key';
const MODEL = 'speech-to-speech';

/** What a turn's latency is measured to, on each transport: words, and the server event. */
const MEASURED_TO: Record<TransportKind, [string, string]> = {
  websocket: ['the first audio delta received', 'response.output_audio.delta'],
  webrtc: ['the server starting the answer’s audio on RTP', 'output_audio_buffer.started'],
};
const TRANSPORT_KEY = 's2s-demo-transport';

const STATE_TEXT: Record<TurnState, string> = {
  idle: 'Not connected',
  listening: 'Listening: speak any time',
  user: 'Hearing you…',
  thinking: 'Thinking…',
  tool: 'Running a tool…',
  speaking: 'Speaking: talk over it or press Interrupt',
};

// ------------------------------------------------------------------ test hook

interface InboundAudio {
  bytesReceived: number;
  packetsReceived: number;
  totalAudioEnergy: number;
}

/** What the page saw, for headless tests and for curious people with a console open. */
interface DemoStats {
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
  errors: string[];
}

declare global {
  interface Window {
    __demoStats: DemoStats;
    __demo: { inboundAudio(): Promise<InboundAudio | null>; interrupt(): void };
  }
}

// ------------------------------------------------------------------ the page

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
}

const ui = {
  connect: element<HTMLButtonElement>('connect'),
  interrupt: element<HTMLButtonElement>('interrupt'),
  enableSound: element<HTMLButtonElement>('enable-sound'),
  transports: [...document.querySelectorAll<HTMLInputElement>('input[name="transport"]')],
  connection: element<HTMLElement>('connection-text'),
  state: element<HTMLElement>('state'),
  micLevel: element<HTMLMeterElement>('mic-level'),
  latencyLast: element<HTMLElement>('latency-last'),
  latencyMedian: element<HTMLElement>('latency-median'),
  turns: element<HTMLElement>('turn-count'),
  received: element<HTMLElement>('audio-received'),
  measuredTo: element<HTMLElement>('measured-to'),
  errors: element<HTMLElement>('errors'),
  errorList: element<HTMLUListElement>('error-list'),
  dismissErrors: element<HTMLButtonElement>('dismiss-errors'),
  transcript: element<HTMLOListElement>('transcript'),
  remoteAudio: element<HTMLAudioElement>('remote-audio'),
};
const mouth = Mouth.inPage('mouth-lips', 'mouth-inside', element<HTMLElement>('mouth-viseme'));

const params = new URLSearchParams(location.search);
const stats: DemoStats = {
  transport: initialTransport(),
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
  errors: [],
};
window.__demoStats = stats;

/** ?transport=… if given, else the visitor's last choice, else WebSocket (it needs no server extra). */
function initialTransport(): TransportKind {
  let wanted = params.get('transport');
  try {
    wanted ??= localStorage.getItem(TRANSPORT_KEY);
  } catch {
    // storage is off (a privacy setting): nothing remembered
  }
  return wanted === 'webrtc' ? 'webrtc' : 'websocket';
}

const transcript = new TranscriptView(ui.transcript);
const turns = new TurnTracker((state) => {
  stats.state = state;
  stats.states.push(state);
  document.body.dataset.state = state;
  ui.state.textContent = STATE_TEXT[state];
  ui.interrupt.disabled = state === 'idle';
});

const agent = new RealtimeAgent({
  name: 'Assistant',
  instructions:
    'You are a friendly voice assistant running on a local server. Answer in one or two short sentences. ' +
    'When asked for the time or the date, call get_local_time.',
  tools: [getLocalTime],
});

// ------------------------------------------------------------------ one connection

class Call {
  private closing = false;
  private lost = false;
  private meterTimer: number | undefined;

  private constructor(
    readonly kind: TransportKind,
    readonly session: RealtimeSession,
    private readonly transport: OpenAIRealtimeWebRTC | OpenAIRealtimeWebSocket,
    private readonly microphone: MediaStream,
    readonly audio: AudioEngine,
  ) {}

  static async open(kind: TransportKind): Promise<Call> {
    const microphone = await openMicrophone();
    let audio: AudioEngine | undefined;
    let session: RealtimeSession | undefined;
    try {
      audio = await AudioEngine.start(
        microphone,
        kind === 'websocket'
          ? { onMicFrame: (pcm) => session?.sendAudio(pcm), onPlayback: (event) => onPlayback(event) }
          : {},
      );
      const { websocketUrl, callsUrl } = endpoints();
      const transport =
        kind === 'webrtc'
          ? new OpenAIRealtimeWebRTC({
              baseUrl: callsUrl,
              useInsecureApiKey: true,
              mediaStream: microphone,
              audioElement: ui.remoteAudio,
            })
          : new OpenAIRealtimeWebSocket({ url: websocketUrl, useInsecureApiKey: true });
      session = new RealtimeSession(agent, { transport, model: MODEL });
      const call = new Call(kind, session, transport, microphone, audio);
      call.listen();
      await session.connect({ apiKey: PLACEHOLDER_KEY, url: kind === 'webrtc' ? callsUrl : websocketUrl });
      if (call.lost) throw new Error('the server closed the connection');
      // Ask for the visemes extension; a server without --enable_visemes just never sends them.
      transport.sendEvent({ type: 'session.update', session: { type: 'realtime', extensions: [VISEMES_EXTENSION] } });
      return call;
    } catch (error) {
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
    window.clearInterval(this.meterTimer);
    try {
      this.session.close();
    } finally {
      this.audio.close();
      for (const track of this.microphone.getTracks()) track.stop();
      ui.remoteAudio.srcObject = null;
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

  private listen(): void {
    const { session } = this;
    this.transport.on('connection_change', (status) => {
      if (status !== 'disconnected' || this.closing) return;
      this.lost = true;
      if (call === this) {
        showError('The connection to the server closed.');
        disconnect();
      }
    });
    session.on('transport_event', (event) => onServerEvent(event, this.kind));
    session.on('audio', (event) => {
      stats.audioDeltas += 1;
      stats.audioBytes += event.data.byteLength;
      this.audio.play(event.data);
      ui.received.textContent = formatBytes(stats.audioBytes);
    });
    session.on('audio_interrupted', () => {
      this.audio.clear();
      mouth.clear();
    });
    session.on('agent_tool_start', (_context, _agent, tool, { toolCall }) => {
      turns.toolStarted();
      ui.state.textContent = `Running ${tool.name}…`;
      transcript.toolCall(callIdOf(toolCall), tool.name, argumentsOf(toolCall));
    });
    session.on('agent_tool_end', (_context, _agent, tool, result, { toolCall }) => {
      stats.tools.push({ name: tool.name, result });
      transcript.toolResult(callIdOf(toolCall), tool.name, result);
      turns.toolEnded();
    });
    session.on('error', (event) => showError(describe(event.error)));
    this.meterTimer = window.setInterval(() => {
      ui.micLevel.value = this.audio.level();
      ui.enableSound.hidden = !this.audio.suspended;
      if (this.kind === 'webrtc') {
        void this.inboundAudio().then((inbound) => {
          if (inbound) ui.received.textContent = `${formatBytes(inbound.bytesReceived)} of RTP`;
        });
      }
    }, 100);
  }
}

let call: Call | undefined;
let connecting = false;

function endpoints(): { websocketUrl: string; callsUrl: string } {
  // Relative to the page (/demo/), so a server behind a path prefix works too.
  const calls = new URL('../v1/realtime/calls', location.href);
  const websocket = new URL('../v1/realtime', location.href);
  websocket.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return { websocketUrl: websocket.href, callsUrl: calls.href };
}

function onPlayback(event: 'started' | 'drained' | 'cleared'): void {
  if (event === 'cleared') stats.cleared += 1;
  if (event === 'cleared') mouth.clear();
  if (event !== 'started') turns.playbackEnded();
}

function onServerEvent(event: TransportEvent, kind: TransportKind): void {
  const at = performance.now();
  const field = (name: string): string => {
    const value = (event as Record<string, unknown>)[name];
    return typeof value === 'string' ? value : '';
  };
  switch (event.type) {
    case 'input_audio_buffer.speech_started':
      turns.speechStarted();
      transcript.userStarted(field('item_id'));
      break;
    case 'input_audio_buffer.speech_stopped':
      turns.speechStopped(at);
      break;
    case 'conversation.item.input_audio_transcription.delta':
      transcript.userDelta(field('item_id'), field('delta'));
      break;
    case 'conversation.item.input_audio_transcription.completed':
      transcript.userDone(field('item_id'), field('transcript'));
      if (field('transcript').trim()) stats.userTranscripts.push(field('transcript'));
      else turns.nothingHeard();
      break;
    case 'conversation.item.input_audio_transcription.failed':
      transcript.userDone(field('item_id'), '');
      turns.nothingHeard();
      break;
    case 'response.created':
      turns.responseCreated(responseOf(event).id);
      break;
    case 'response.output_audio_transcript.delta':
      transcript.assistantDelta(field('item_id'), field('response_id'), field('delta'));
      break;
    case 'response.output_audio_transcript.done':
      transcript.assistantDone(field('item_id'), field('response_id'), field('transcript'));
      stats.assistantTranscripts.push(field('transcript'));
      break;
    case 'response.output_audio.delta':
      if (kind === 'websocket') firstAudio(field('response_id'), field('item_id'), at, kind);
      break;
    case VISEMES_EXTENSION:
      stats.visemeEvents += 1;
      if (kind === 'websocket') mouth.queued(event as unknown as VisemesEvent, at);
      else mouth.timed(event as unknown as VisemesEvent, at);
      break;
    case 'output_audio_buffer.started':
      stats.outputAudioStarted += 1;
      if (kind === 'webrtc') {
        firstAudio(field('response_id'), undefined, at, kind);
        mouth.started(at);
      }
      break;
    case 'output_audio_buffer.cleared':
      if (kind === 'webrtc') {
        stats.cleared += 1;
        turns.playbackEnded();
        mouth.clear();
      }
      break;
    case 'output_audio_buffer.stopped':
      if (kind === 'webrtc') {
        turns.playbackEnded();
        mouth.clear();
      }
      break;
    case 'response.done': {
      const response = responseOf(event);
      if (response.status === 'cancelled') transcript.interrupted(response.id);
      const calledTool = response.output.some((item) => item.type === 'function_call');
      const hasAudio =
        response.status === 'completed' &&
        response.output.some((item) => item.content?.some((part) => part.type === 'output_audio'));
      turns.responseDone(response.id, calledTool, hasAudio);
      break;
    }
  }
}

function firstAudio(responseId: string, itemId: string | undefined, at: number, kind: TransportKind): void {
  const latency = turns.firstAudio(responseId, at);
  if (latency === undefined) return;
  stats.latenciesMs.push(latency);
  transcript.latency(responseId, itemId, latency, MEASURED_TO[kind].join(', '));
  ui.latencyLast.textContent = `${Math.round(latency)} ms`;
  ui.latencyMedian.textContent = `${Math.round(median(stats.latenciesMs) ?? 0)} ms`;
  ui.turns.textContent = String(stats.latenciesMs.length);
}

interface ResponseSummary {
  id: string;
  status: string;
  output: { type?: string; content?: { type?: string }[] }[];
}

function responseOf(event: TransportEvent): ResponseSummary {
  const response = ((event as Record<string, unknown>).response ?? {}) as Partial<ResponseSummary>;
  return { id: response.id ?? '', status: response.status ?? '', output: response.output ?? [] };
}

function callIdOf(toolCall: unknown): string {
  const call = toolCall as { callId?: string; id?: string };
  return call.callId ?? call.id ?? '';
}

function argumentsOf(toolCall: unknown): string {
  const call = toolCall as { arguments?: string };
  return call.arguments ?? '{}';
}

// ------------------------------------------------------------------ controls

async function connect(): Promise<void> {
  if (call || connecting) return;
  const kind = selectedTransport();
  connecting = true;
  stats.transport = kind;
  setConnection('connecting', kind);
  clearErrors();
  try {
    call = await Call.open(kind);
    setConnection('connected', kind);
    turns.connected();
  } catch (error) {
    showError(`Could not connect over ${label(kind)}: ${describe(error)}`);
    setConnection('disconnected', kind);
  } finally {
    connecting = false;
  }
}

function disconnect(): void {
  const current = call;
  call = undefined;
  try {
    current?.close();
  } catch (error) {
    showError(describe(error));
  }
  turns.disconnected();
  setConnection('disconnected', current?.kind ?? selectedTransport());
}

function setConnection(status: Connection, kind: TransportKind): void {
  stats.connection = status;
  document.body.dataset.connection = status;
  const text = { connected: `Connected over ${label(kind)}`, connecting: `Connecting over ${label(kind)}…` };
  ui.connection.textContent = status === 'disconnected' ? 'Disconnected' : text[status];
  ui.connect.textContent = status === 'disconnected' ? 'Connect' : 'Disconnect';
  ui.connect.disabled = status === 'connecting';
  for (const input of ui.transports) input.disabled = status !== 'disconnected';
  showMeasuredTo(kind);
  ui.received.textContent = '–';
  if (status === 'disconnected') ui.enableSound.hidden = true;
}

function showMeasuredTo(kind: TransportKind): void {
  const [words, event] = MEASURED_TO[kind];
  const code = document.createElement('code');
  code.textContent = event;
  ui.measuredTo.replaceChildren(`${words} (`, code, ')');
}

function selectedTransport(): TransportKind {
  return ui.transports.find((input) => input.checked)?.value === 'webrtc' ? 'webrtc' : 'websocket';
}

function label(kind: TransportKind): string {
  return kind === 'webrtc' ? 'WebRTC' : 'WebSocket';
}

function showError(message: string): void {
  stats.errors.push(message);
  const item = document.createElement('li');
  item.textContent = message;
  ui.errorList.append(item);
  while (ui.errorList.children.length > 3) ui.errorList.firstElementChild?.remove();
  ui.errors.hidden = false;
}

function clearErrors(): void {
  ui.errorList.replaceChildren();
  ui.errors.hidden = true;
}

/** A readable line from whatever the SDK, the browser or the server reported. */
function describe(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth += 1) {
    const { message } = current as { message?: unknown };
    if (typeof message === 'string' && message) return message;
    current = (current as { error?: unknown }).error;
  }
  if (typeof current === 'string' && current) return current;
  if (error instanceof Event) return `${error.type} on the ${label(stats.transport)} connection`;
  return String(error);
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} kB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function interrupt(): void {
  if (!call) return;
  stats.interruptRequests += 1;
  call.session.interrupt();
}

ui.connect.addEventListener('click', () => {
  if (call) disconnect();
  else void connect();
});
ui.interrupt.addEventListener('click', interrupt);
ui.enableSound.addEventListener('click', () => {
  void call?.audio.context.resume();
  void ui.remoteAudio.play().catch(() => undefined);
  ui.enableSound.hidden = true;
});
ui.dismissErrors.addEventListener('click', clearErrors);
for (const input of ui.transports) {
  input.checked = input.value === stats.transport;
  input.addEventListener('change', () => {
    stats.transport = selectedTransport();
    try {
      localStorage.setItem(TRANSPORT_KEY, stats.transport);
    } catch {
      // storage is off: the choice lasts for this page only
    }
    showMeasuredTo(stats.transport);
  });
}
window.addEventListener('pagehide', () => call?.close());

window.__demo = {
  inboundAudio: async () => (call ? call.inboundAudio() : null),
  interrupt,
};

setConnection('disconnected', stats.transport);
if (params.get('autoconnect') === '1') void connect();
