// The audio-thread half of the WebSocket transport (built as its own file, audio-worklet.js).
// WebRTC needs none of this: the browser's WebRTC stack sends the microphone and plays the answer.
//
//   mic-capture  the microphone as PCM16 at 24 kHz, posted to the page in 20 ms frames
//   pcm-player   plays the answer's PCM16 24 kHz chunks; "clear" drops what has not been played;
//                posts "started" when sound begins and "drained" (or "cleared") when it ends
//
// The page asks for a 24 kHz AudioContext, so usually no resampling happens here; a browser that
// runs the context at another rate gets linear interpolation to and from 24 kHz.

declare const sampleRate: number;
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
}
declare function registerProcessor(name: string, processor: new () => AudioWorkletProcessor): void;

const WIRE_RATE = 24000;
const FRAME_SAMPLES = WIRE_RATE / 50; // 20 ms

/** Linear interpolation between two rates, continuous across blocks. */
class LinearResampler {
  private readonly step: number; // input samples per output sample
  private position = 1; // of the next output sample, in a block that starts with the previous block's last sample
  private previous = 0;

  constructor(fromRate: number, toRate: number) {
    this.step = fromRate / toRate;
  }

  process(input: Float32Array): Float32Array {
    if (this.step === 1) return input.slice();
    const n = input.length;
    const at = (i: number): number => (i === 0 ? this.previous : input[i - 1]);
    const output = new Float32Array(Math.max(0, Math.ceil((n - this.position) / this.step)));
    let written = 0;
    while (this.position < n && written < output.length) {
      const i = Math.floor(this.position);
      const fraction = this.position - i;
      output[written++] = at(i) * (1 - fraction) + at(i + 1) * fraction;
      this.position += this.step;
    }
    this.position -= n;
    if (n > 0) this.previous = input[n - 1];
    return output.subarray(0, written);
  }
}

class MicCapture extends AudioWorkletProcessor {
  private readonly resampler = new LinearResampler(sampleRate, WIRE_RATE);
  private frame = new Int16Array(FRAME_SAMPLES);
  private filled = 0;

  process(inputs: Float32Array[][]): boolean {
    const channel = inputs[0]?.[0];
    if (!channel) return true;
    for (const sample of this.resampler.process(channel)) {
      this.frame[this.filled++] = Math.max(-1, Math.min(1, sample)) * 0x7fff;
      if (this.filled === FRAME_SAMPLES) {
        this.port.postMessage(this.frame.buffer, [this.frame.buffer]);
        this.frame = new Int16Array(FRAME_SAMPLES);
        this.filled = 0;
      }
    }
    return true;
  }
}

class PcmPlayer extends AudioWorkletProcessor {
  private queue: Float32Array[] = [];
  private offset = 0; // into queue[0]
  private resampler = new LinearResampler(WIRE_RATE, sampleRate);
  private playing = false;

  constructor() {
    super();
    this.port.onmessage = (event: MessageEvent<ArrayBuffer | 'clear'>) => {
      if (event.data === 'clear') {
        this.queue = [];
        this.offset = 0;
        this.resampler = new LinearResampler(WIRE_RATE, sampleRate);
        if (this.playing) {
          this.playing = false;
          this.port.postMessage('cleared');
        }
        return;
      }
      const pcm = new Int16Array(event.data);
      const samples = new Float32Array(pcm.length);
      for (let i = 0; i < pcm.length; i += 1) samples[i] = pcm[i] / 0x8000;
      this.queue.push(this.resampler.process(samples));
    };
  }

  process(_inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    const out = outputs[0][0];
    let written = 0;
    while (written < out.length && this.queue.length > 0) {
      const head = this.queue[0];
      const count = Math.min(out.length - written, head.length - this.offset);
      out.set(head.subarray(this.offset, this.offset + count), written);
      written += count;
      this.offset += count;
      if (this.offset === head.length) {
        this.queue.shift();
        this.offset = 0;
      }
    }
    if (written > 0 && !this.playing) {
      this.playing = true;
      this.port.postMessage('started');
    } else if (written < out.length && this.playing) {
      this.playing = false;
      this.port.postMessage('drained');
    }
    return true;
  }
}

registerProcessor('mic-capture', MicCapture);
registerProcessor('pcm-player', PcmPlayer);
