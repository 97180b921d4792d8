// The demo page: a stock @openai/agents RealtimeSession talking to the speech-to-speech server
// this page was served from, over the SDK's own WebRTC or WebSocket transport (call.ts).
//
//   /demo                                        pick a transport, press Connect
//   /demo?autoconnect=1&transport=webrtc         connect on load (kiosks, tests)
//
// A server started with --api_key needs the key in the page's field (access.ts). A server whose
// sessions are all taken says so; the page counts down and tries again by itself (refusal.ts).
import { RealtimeAgent, type TransportEvent } from '@openai/agents/realtime';

import { accessProblem } from './access';
import { Call, type TransportKind } from './call';
import { argumentsOf, callIdOf, describe, formatBytes, responseOf } from './format';
import { Mouth, VISEMES_EXTENSION, type VisemesEvent } from './mouth';
import { refusalIn, RetryCountdown } from './refusal';
import { type Connection, newStats } from './stats';
import { getLocalTime } from './tools';
import { TranscriptView } from './transcript';
import { median, TurnTracker, type TurnState } from './turns';


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

// ------------------------------------------------------------------ the page

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
}

const ui = {
  connect: element<HTMLButtonElement>('connect'),
  apiKey: element<HTMLInputElement>('api-key'),
  busy: element<HTMLElement>('busy'),
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
const stats = newStats(initialTransport());
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

let call: Call | undefined;
let connecting = false;
const retry = new RetryCountdown((text) => {
  stats.busy = text;
  ui.busy.textContent = text ?? '';
  ui.busy.hidden = text === null;
});

/** The page's side of a call: its events update the page. */
function listen(current: Call): void {
  const { session, kind } = current;
  current.transport.on('connection_change', (status) => {
    if (status !== 'disconnected' || current.closing || call !== current) return;
    showError('The connection to the server closed.');
    disconnect();
  });
  session.on('transport_event', (event) => onServerEvent(event, kind));
  session.on('audio', (event) => {
    stats.audioDeltas += 1;
    stats.audioBytes += event.data.byteLength;
    current.audio.play(event.data);
    ui.received.textContent = formatBytes(stats.audioBytes);
  });
  session.on('audio_interrupted', () => {
    current.audio.clear();
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
  // A server that is full says so with an error too: the busy line shows it, not the problem list.
  session.on('error', (event) => {
    if (!refusalIn(event)) showError(describe(event.error, label(kind)));
  });
  const meter = window.setInterval(() => {
    if (current.closing) {
      window.clearInterval(meter);
      return;
    }
    ui.micLevel.value = current.audio.level();
    ui.enableSound.hidden = !current.audio.suspended;
    if (kind === 'webrtc') {
      void current.inboundAudio().then((inbound) => {
        if (inbound) ui.received.textContent = `${formatBytes(inbound.bytesReceived)} of RTP`;
      });
    }
  }, 100);
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

// ------------------------------------------------------------------ controls

async function connect(): Promise<void> {
  if (call || connecting) return;
  const kind = selectedTransport();
  const apiKey = ui.apiKey.value;
  connecting = true;
  stats.transport = kind;
  setConnection('connecting', kind);
  clearErrors();
  try {
    call = await Call.open({ kind, apiKey, agent, remoteAudio: ui.remoteAudio, onPlayback, listen });
    retry.cancel();
    setConnection('connected', kind);
    turns.connected();
  } catch (error) {
    const refusal = refusalIn(error);
    if (refusal) {
      // The server is full (or this address is at its limit): say so, and try again after its hint.
      stats.refusals += 1;
      setConnection('waiting', kind);
      retry.start(refusal, () => void connect());
    } else {
      retry.cancel();
      const why = (await accessProblem(apiKey)) ?? describe(error, label(kind));
      showError(`Could not connect over ${label(kind)}: ${why}`);
      setConnection('disconnected', kind);
    }
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
    showError(describe(error, label(current?.kind ?? selectedTransport())));
  }
  turns.disconnected();
  setConnection('disconnected', current?.kind ?? selectedTransport());
}

function setConnection(status: Connection, kind: TransportKind): void {
  stats.connection = status;
  document.body.dataset.connection = status;
  const text: Record<Connection, string> = {
    disconnected: 'Disconnected',
    connecting: `Connecting over ${label(kind)}…`,
    waiting: `Waiting for a free session (${label(kind)})`,
    connected: `Connected over ${label(kind)}`,
  };
  const button: Record<Connection, string> = {
    disconnected: 'Connect',
    connecting: 'Disconnect',
    waiting: 'Stop retrying',
    connected: 'Disconnect',
  };
  ui.connection.textContent = text[status];
  ui.connect.textContent = button[status];
  ui.connect.disabled = status === 'connecting';
  for (const input of ui.transports) input.disabled = status !== 'disconnected';
  ui.apiKey.disabled = status === 'connecting' || status === 'connected';
  showMeasuredTo(kind);
  ui.received.textContent = '–';
  if (status !== 'connected') ui.micLevel.value = 0;
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

function interrupt(): void {
  if (!call) return;
  stats.interruptRequests += 1;
  call.session.interrupt();
}

ui.connect.addEventListener('click', () => {
  if (call) disconnect();
  else if (retry.waiting) {
    retry.cancel();
    setConnection('disconnected', selectedTransport());
  } else void connect();
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
