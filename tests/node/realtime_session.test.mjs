// A stock @openai/agents RealtimeSession (OpenAIRealtimeWebSocket transport) holds a spoken
// conversation with the speech-to-speech server; only the URL differs from talking to OpenAI.
//
// Run by tests/compat/test_openai_agents_js.py, which starts a server with scripted backends and
// hands over its URL and the scripted conversation (tests/compat/conftest.py: Conversation) as JSON:
//   a plain turn, a get_weather tool call turn with its follow-up, a long answer the user talks
//   over (barge-in), the reply to that, and a long answer the client interrupts itself.
//
//   S2S_REALTIME_URL=ws://127.0.0.1:PORT/v1/realtime S2S_CONVERSATION='{...}' node --test
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { RealtimeAgent, RealtimeSession, tool } from '@openai/agents/realtime';

// The SDK validates server events with its own zod schemas and silently downgrades an event that
// fails them to a "generic" one it ignores. The module is not exported, so import it by path to
// hold every standard event the server sends to the SDK's schema.
const { realtimeServerEventSchema } = await import(
  new globalThis.URL('./node_modules/@openai/agents-realtime/dist/openaiRealtimeEvents.mjs', import.meta.url)
);
const KNOWN_EVENT_TYPES = new Set(realtimeServerEventSchema.options.map((option) => option.shape.type.value));

const URL = process.env.S2S_REALTIME_URL;
const CONVERSATION = JSON.parse(process.env.S2S_CONVERSATION ?? '{}');
const FIRST_QUESTION = CONVERSATION.first_transcript;
const FIRST_REPLY = CONVERSATION.first_reply;
const TOOL_QUESTION = CONVERSATION.tool_transcript;
const TOOL_REPLY = CONVERSATION.tool_reply;
const [STORY_QUESTION, STOP_REQUEST, SECOND_STORY_QUESTION] = CONVERSATION.extra_transcripts ?? [];
const [STORY, STOP_REPLY, SECOND_STORY] = CONVERSATION.extra_replies ?? [];
const STEP_TIMEOUT_MS = Number(process.env.S2S_STEP_TIMEOUT_MS ?? 20000);
const RATE = 24000;

// ------------------------------------------------------------------ helpers

/** PCM16 little-endian at 24 kHz: a loud tone (speech for the server VAD), then silence. */
function spokenTurn(toneSeconds = 1.0, silenceSeconds = 1.2) {
  const toneSamples = Math.round(toneSeconds * RATE);
  const total = toneSamples + Math.round(silenceSeconds * RATE);
  const pcm = new Int16Array(total);
  for (let i = 0; i < toneSamples; i += 1) {
    pcm[i] = Math.round(0.3 * 32767 * Math.sin((2 * Math.PI * 440 * i) / RATE));
  }
  return pcm;
}

/** Stream PCM in 40 ms chunks, roughly as fast as a microphone would (a little faster). */
async function sendSpeech(session, pcm) {
  const chunk = (RATE * 40) / 1000;
  for (let start = 0; start < pcm.length; start += chunk) {
    const piece = pcm.slice(start, start + chunk);
    session.sendAudio(piece.buffer);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Settle with `promise`, or reject after `timeoutMs` (clearing the timer either way). */
function withTimeout(promise, label, timeoutMs = STEP_TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${label}`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Resolve once `check()` is truthy, re-checking on every event of `emitter`; reject after a timeout. */
function waitUntil(emitter, events, check, label, timeoutMs = STEP_TIMEOUT_MS) {
  return new Promise((resolve, reject) => {
    const listeners = [];
    const finish = (fn, value) => {
      clearTimeout(timer);
      for (const [name, listener] of listeners) emitter.off(name, listener);
      fn(value);
    };
    const timer = setTimeout(
      () => finish(reject, new Error(`timed out after ${timeoutMs} ms waiting for ${label}`)),
      timeoutMs,
    );
    const probe = () => {
      let value;
      try {
        value = check();
      } catch (error) {
        finish(reject, error);
        return;
      }
      if (value) finish(resolve, value);
    };
    for (const name of events) {
      emitter.on(name, probe);
      listeners.push([name, probe]);
    }
    probe();
  });
}

/** The events of one server event type seen so far. */
const seen = (type) => serverEvents.filter((event) => event.type === type);

/** Wait for the first response created after `createdBefore` to deliver audio; returns its id. */
function nextResponseWithAudio(createdBefore, label) {
  return waitUntil(session, ['audio'], () => {
    const created = seen('response.created').slice(createdBefore);
    const id = created[0]?.response.id;
    return id && audioChunks.some((chunk) => chunk.responseId === id) ? id : undefined;
  }, label);
}

/** Wait for the response.done of response `id`. */
const responseDone = (id, label) =>
  waitUntil(session, ['transport_event'],
    () => seen('response.done').find((event) => event.response.id === id), label);

/** Audio deltas of response `id` that the server sent after `event`. */
const audioAfter = (event, id) =>
  serverEvents.slice(serverEvents.indexOf(event) + 1)
    .filter((e) => e.type === 'response.output_audio.delta' && e.response_id === id);

const messageText = (item) =>
  (item.content ?? []).map((part) => part.transcript ?? part.text ?? '').join('');

const findMessage = (history, role, text) =>
  history.find((item) => item.type === 'message' && item.role === role && messageText(item) === text);

// ------------------------------------------------------------------ the conversation

const toolCalls = [];
const getWeather = tool({
  name: 'get_weather',
  description: 'The current weather in a city.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
  execute: async ({ city }) => {
    toolCalls.push(city);
    return `sunny, 21 degrees in ${city}`;
  },
});

const agent = new RealtimeAgent({
  name: 'Assistant',
  instructions: 'You are a helpful voice assistant. Answer briefly.',
  tools: [getWeather],
});

let session;
const errors = [];
const serverEvents = [];
const schemaFailures = [];
const audioChunks = [];
const completedTurns = [];

before(async () => {
  assert.ok(URL, 'S2S_REALTIME_URL must point at the server, e.g. ws://127.0.0.1:8765/v1/realtime');
  assert.ok(FIRST_QUESTION && STORY && SECOND_STORY, 'S2S_CONVERSATION must hold the scripted conversation');
  session = new RealtimeSession(agent, { transport: 'websocket', model: 'speech-to-speech' });
  session.on('error', (event) => errors.push(event.error ?? event));
  session.on('transport_event', (event) => {
    serverEvents.push(event);
    if (KNOWN_EVENT_TYPES.has(event.type)) {
      const parsed = realtimeServerEventSchema.safeParse(event);
      if (!parsed.success) schemaFailures.push({ type: event.type, issues: parsed.error.issues });
    }
  });
  session.on('audio', (event) => audioChunks.push(event));
  session.on('agent_end', (_context, _agent, text) => completedTurns.push(text));
  await withTimeout(session.connect({ apiKey: 'sk-local-not-checked', url: URL }), 'connect()');
});

after(() => {
  session?.close();
});

test('session.created and session.updated arrive; the SDK session config is accepted', async () => {
  await waitUntil(session, ['transport_event'], () => serverEvents.some((e) => e.type === 'session.updated'),
    'session.updated');
  const created = serverEvents.find((e) => e.type === 'session.created');
  assert.ok(created, 'no session.created');
  assert.equal(typeof created.event_id, 'string');
  const updated = serverEvents.find((e) => e.type === 'session.updated');
  assert.equal(updated.session.instructions, 'You are a helpful voice assistant. Answer briefly.');
  // The SDK asks for {type: 'semantic_vad'} and reads the effective turn detection back to decide
  // whether the server cancels on barge-in by itself (else it sends response.cancel on its own).
  // This scripted server has no turn detector: it answers with the server_vad that serves the session.
  const turnDetection = updated.session.audio.input.turn_detection;
  assert.equal(turnDetection.type, 'server_vad');
  assert.equal(turnDetection.interrupt_response, true);
  assert.equal(turnDetection.create_response, true);
  assert.deepEqual(updated.session.tools.map((t) => t.name), ['get_weather']);
  assert.deepEqual(errors, [], `the server rejected something the SDK sent: ${JSON.stringify(errors)}`);
});

test('a spoken turn: user transcript, assistant transcript and audio, a completed turn', async () => {
  const audioBefore = audioChunks.length;
  const turnsBefore = completedTurns.length;
  await sendSpeech(session, spokenTurn());

  const user = await waitUntil(session, ['history_updated', 'history_added'],
    () => findMessage(session.history, 'user', FIRST_QUESTION), 'the user transcript in history');
  assert.equal(user.content[0].type, 'input_audio');

  await waitUntil(session, ['agent_end'], () => completedTurns.length > turnsBefore, 'agent_end (response.done)');
  const assistant = await waitUntil(session, ['history_updated', 'history_added'],
    () => findMessage(session.history, 'assistant', FIRST_REPLY), 'the assistant transcript in history');
  assert.equal(assistant.status, 'completed');
  assert.equal(completedTurns.at(-1), FIRST_REPLY);

  const audio = audioChunks.slice(audioBefore);
  assert.ok(audio.length > 0, 'no audio events');
  const bytes = audio.reduce((sum, chunk) => sum + chunk.data.byteLength, 0);
  assert.ok(bytes > RATE * 2 * 0.1, `only ${bytes} bytes of audio`);
  const responseIds = new Set(audio.map((chunk) => chunk.responseId));
  assert.equal(responseIds.size, 1, 'audio of one turn should belong to one response');

  const done = serverEvents.filter((e) => e.type === 'response.done');
  assert.equal(done.at(-1).response.status, 'completed');
  assert.deepEqual(errors, [], `errors during the turn: ${JSON.stringify(errors)}`);
});

test('a tool call round trip: the SDK runs the tool, sends its output, the follow-up reply arrives', async () => {
  const turnsBefore = completedTurns.length;
  const toolEnd = new Promise((resolve) => session.once('agent_tool_end', (...args) => resolve(args)));
  await sendSpeech(session, spokenTurn());

  await waitUntil(session, ['history_updated', 'history_added'],
    () => findMessage(session.history, 'user', TOOL_QUESTION), 'the second user transcript in history');
  const [, , toolDef, result] = await withTimeout(toolEnd, 'agent_tool_end');
  assert.equal(toolDef.name, 'get_weather');
  assert.equal(result, 'sunny, 21 degrees in Paris');
  assert.deepEqual(toolCalls, ['Paris']);

  // The SDK answered with function_call_output + response.create; the server's follow-up reply is spoken.
  const reply = await waitUntil(session, ['history_updated', 'history_added'],
    () => findMessage(session.history, 'assistant', TOOL_REPLY), 'the follow-up reply after the tool output');
  await waitUntil(session, ['agent_end'], () => completedTurns.includes(TOOL_REPLY), 'agent_end of the follow-up');
  assert.ok(reply);

  const call = session.history.find((item) => item.type === 'function_call' && item.name === 'get_weather');
  assert.ok(call, 'the function_call item is in history');
  assert.equal(JSON.parse(call.arguments).city, 'Paris');
  assert.equal(call.output, 'sunny, 21 degrees in Paris');

  const done = serverEvents.filter((e) => e.type === 'response.done').slice(-2);
  assert.deepEqual(done.map((e) => e.response.status), ['completed', 'completed']);
  // A short preamble may be said before the call (docs/sessions.md, "No dead air"); the call ends the response.
  const outputTypes = done[0].response.output.map((item) => item.type);
  assert.equal(outputTypes.at(-1), 'function_call');
  assert.ok(outputTypes.slice(0, -1).every((type) => type === 'message'), outputTypes.join());
  assert.equal(completedTurns.length - turnsBefore, 2, 'one turn for the tool call, one for the follow-up');

  // History order: question, call, answer.
  const order = session.history.map((item) => item.itemId);
  const question = findMessage(session.history, 'user', TOOL_QUESTION);
  assert.ok(order.indexOf(question.itemId) < order.indexOf(call.itemId));
  assert.ok(order.indexOf(call.itemId) < order.indexOf(reply.itemId));
  assert.deepEqual(errors, [], `errors during the tool round trip: ${JSON.stringify(errors)}`);
});

test('barge-in: speech during the answer cancels it (turn_detected), the SDK stops playback, the new turn is answered', async () => {
  const createdBefore = seen('response.created').length;
  const turnsBefore = completedTurns.length;
  await sendSpeech(session, spokenTurn());
  const storyId = await nextResponseWithAudio(createdBefore, 'the first audio of the long answer');

  const interrupted = new Promise((resolve) => session.once('audio_interrupted', resolve));
  await sendSpeech(session, spokenTurn());
  const done = await responseDone(storyId, 'response.done of the interrupted answer');
  assert.equal(done.response.status, 'cancelled');
  assert.deepEqual(done.response.status_details, { type: 'cancelled', reason: 'turn_detected' });
  await withTimeout(interrupted, 'audio_interrupted');

  // The spec's order: the cancelled response's audio and transcript end, then response.done,
  // then speech_started; no audio of that response after its response.done.
  const position = (event) => serverEvents.indexOf(event);
  const audioDone = seen('response.output_audio.done').find((e) => e.response_id === storyId);
  const transcriptDone = seen('response.output_audio_transcript.done').find((e) => e.response_id === storyId);
  const speechStarted = seen('input_audio_buffer.speech_started').find((e) => position(e) > position(done));
  assert.ok(audioDone && transcriptDone && speechStarted, 'audio done, transcript done and speech_started');
  assert.ok(position(audioDone) < position(transcriptDone) && position(transcriptDone) < position(done));
  assert.ok(STORY.startsWith(transcriptDone.transcript) && transcriptDone.transcript.length < STORY.length,
    `the cancelled transcript should be a strict prefix of the story: ${JSON.stringify(transcriptDone.transcript)}`);

  await waitUntil(session, ['history_updated', 'history_added'],
    () => findMessage(session.history, 'user', STOP_REQUEST), 'the interrupting turn in history');
  await waitUntil(session, ['history_updated', 'history_added'],
    () => findMessage(session.history, 'assistant', STOP_REPLY), 'the reply to the interrupting turn');
  await waitUntil(session, ['agent_end'], () => completedTurns.includes(STOP_REPLY), 'agent_end of that reply');
  assert.equal(completedTurns.length - turnsBefore, 2, 'the cancelled answer and the reply both end a turn');
  assert.deepEqual(audioAfter(done, storyId), []);
  const story = session.history.find((item) => item.itemId === audioDone.item_id);
  assert.equal(story?.status, 'incomplete');
  assert.deepEqual(errors, [], `errors during barge-in: ${JSON.stringify(errors)}`);
});

test('session.interrupt() mid-answer: response.cancel and truncate are accepted, the answer ends client_cancelled', async () => {
  const createdBefore = seen('response.created').length;
  await sendSpeech(session, spokenTurn());
  await waitUntil(session, ['history_updated', 'history_added'],
    () => findMessage(session.history, 'user', SECOND_STORY_QUESTION), 'the question in history');
  const storyId = await nextResponseWithAudio(createdBefore, 'the first audio of the second long answer');

  session.interrupt();
  const done = await responseDone(storyId, 'response.done of the interrupted answer');
  assert.equal(done.response.status, 'cancelled');
  assert.deepEqual(done.response.status_details, { type: 'cancelled', reason: 'client_cancelled' });
  // Give any stray output a moment to show up, then check nothing of it came after the terminal.
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.deepEqual(audioAfter(done, storyId), []);
  const transcript = seen('response.output_audio_transcript.done').find((e) => e.response_id === storyId);
  assert.ok(SECOND_STORY.startsWith(transcript.transcript) && transcript.transcript.length < SECOND_STORY.length);
  assert.deepEqual(errors, [], `errors after session.interrupt(): ${JSON.stringify(errors)}`);
});

// Last: it covers every event of the conversation above.
test('every standard server event of the conversation passes the SDK schema', () => {
  assert.ok(serverEvents.length > 20, `only ${serverEvents.length} server events seen`);
  assert.deepEqual(schemaFailures, []);
});
