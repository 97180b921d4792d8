// The microphone, its level meter, and (for the WebSocket transport) PCM capture and playback.

export const WIRE_RATE = 24000;

/** Ask for the microphone, with a message that says what to do when that fails. */
export async function openMicrophone(): Promise<MediaStream> {
  if (!window.isSecureContext) {
    throw new Error(
      'The microphone needs a secure page: open the demo over https, or as http://localhost or http://127.0.0.1.',
    );
  }
  if (!navigator.mediaDevices?.getUserMedia) {
    throw new Error('This browser gives pages no microphone access (navigator.mediaDevices is missing).');
  }
  try {
    return await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
  } catch (error) {
    const name = error instanceof DOMException ? error.name : '';
    if (name === 'NotAllowedError') {
      throw new Error('Microphone access was denied: allow it for this page and connect again.');
    }
    if (name === 'NotFoundError') throw new Error('No microphone was found.');
    throw error;
  }
}

export interface PlaybackListener {
  (event: 'started' | 'drained' | 'cleared'): void;
}

interface AudioOptions {
  /** Capture PCM16 24 kHz frames of the microphone (the WebSocket transport sends them itself). */
  onMicFrame?: (pcm: ArrayBuffer) => void;
  /** Play the answer's PCM here (WebSocket) rather than leaving it to WebRTC. */
  onPlayback?: PlaybackListener;
}

/**
 * One AudioContext for the session: a level meter of the microphone for both transports; for the
 * WebSocket transport also the capture and the player (audio-worklet.js).
 */
export class AudioEngine {
  private readonly analyser: AnalyserNode;
  private readonly samples: Float32Array<ArrayBuffer>;
  private player: AudioWorkletNode | undefined;

  private constructor(
    readonly context: AudioContext,
    private readonly source: MediaStreamAudioSourceNode,
  ) {
    this.analyser = new AnalyserNode(context, { fftSize: 1024 });
    this.samples = new Float32Array(this.analyser.fftSize);
    source.connect(this.analyser);
  }

  static async start(stream: MediaStream, options: AudioOptions = {}): Promise<AudioEngine> {
    const [context, source] = openContext(stream);
    const engine = new AudioEngine(context, source);
    try {
      if (options.onMicFrame || options.onPlayback) {
        await context.audioWorklet.addModule(new URL('./audio-worklet.js', import.meta.url));
      }
      if (options.onMicFrame) {
        const onMicFrame = options.onMicFrame;
        const capture = new AudioWorkletNode(context, 'mic-capture', { numberOfOutputs: 0 });
        capture.port.onmessage = (event: MessageEvent<ArrayBuffer>) => onMicFrame(event.data);
        source.connect(capture);
      }
      if (options.onPlayback) {
        const onPlayback = options.onPlayback;
        engine.player = new AudioWorkletNode(context, 'pcm-player', { numberOfInputs: 0, outputChannelCount: [1] });
        engine.player.port.onmessage = (event: MessageEvent<'started' | 'drained' | 'cleared'>) =>
          onPlayback(event.data);
        engine.player.connect(context.destination);
      }
    } catch (error) {
      engine.close();
      throw error;
    }
    return engine;
  }

  /** Microphone level, 0..1 on a 60 dB scale. */
  level(): number {
    this.analyser.getFloatTimeDomainData(this.samples);
    let sum = 0;
    for (const sample of this.samples) sum += sample * sample;
    const rms = Math.sqrt(sum / this.samples.length);
    return rms > 0 ? Math.max(0, Math.min(1, 1 + (20 * Math.log10(rms)) / 60)) : 0;
  }

  /** Queue PCM16 24 kHz audio of the answer (WebSocket transport). */
  play(pcm: ArrayBuffer): void {
    this.player?.port.postMessage(pcm);
  }

  /** Drop the answer's audio that has not been played yet. */
  clear(): void {
    this.player?.port.postMessage('clear');
  }

  get suspended(): boolean {
    return this.context.state === 'suspended';
  }

  close(): void {
    this.source.disconnect();
    void this.context.close();
  }
}

/** A 24 kHz context if the browser can feed the microphone into one, else one at its own rate. */
function openContext(stream: MediaStream): [AudioContext, MediaStreamAudioSourceNode] {
  const wanted = new AudioContext({ sampleRate: WIRE_RATE, latencyHint: 'interactive' });
  try {
    return [wanted, wanted.createMediaStreamSource(stream)];
  } catch {
    // Firefox cannot connect a microphone to a context at another rate than the device's.
    void wanted.close();
    const native = new AudioContext({ latencyHint: 'interactive' });
    return [native, native.createMediaStreamSource(stream)];
  }
}
