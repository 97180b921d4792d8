// A drawn mouth, moved by the server's timed visemes (the speech_to_speech.output_audio.visemes
// extension, docs/visemes.md) in step with the answer's playback.
//
// WebSocket: each visemes event arrives right before the audio chunk it describes, and this page
// plays chunks back to back, so a chunk's mouth shapes start where the queued audio ends.
// WebRTC: the audio plays on the RTP track and the events may arrive in any order relative to it,
// so shapes are placed on the item's audio timeline (audio_start_ms) from the moment the server
// says it started playing (output_audio_buffer.started).

export const VISEMES_EXTENSION = 'speech_to_speech.output_audio.visemes';

interface Cue {
  viseme: string;
  start_ms: number;
  duration_ms: number;
}

export interface VisemesEvent {
  item_id: string;
  audio_start_ms: number;
  visemes: Cue[];
}

interface Scheduled {
  from: number;
  to: number;
  viseme: string;
}

/** How far the jaw opens (0..1) and how wide the lips are (0..1), per viseme of the set. */
const SHAPES: Record<string, [open: number, wide: number]> = {
  sil: [0, 0.5],
  PP: [0, 0.44],
  FF: [0.12, 0.52],
  TH: [0.22, 0.55],
  DD: [0.3, 0.56],
  kk: [0.42, 0.5],
  CH: [0.26, 0.34],
  SS: [0.14, 0.62],
  nn: [0.22, 0.52],
  RR: [0.3, 0.36],
  aa: [0.95, 0.56],
  E: [0.58, 0.66],
  ih: [0.36, 0.7],
  oh: [0.72, 0.36],
  ou: [0.38, 0.26],
};

export class Mouth {
  private cues: Scheduled[] = [];
  private queueEnd = 0;
  private anchors = new Map<string, number>();
  private waiting: VisemesEvent[] = [];
  private playing = false;
  private frame = 0;
  /** Events received and the viseme shown now, for tests and curious people. */
  events = 0;
  shown = 'sil';

  constructor(
    private readonly lips: SVGPathElement,
    private readonly inside: SVGPathElement,
    private readonly label: HTMLElement,
  ) {
    this.draw('sil');
  }

  /** The mouth drawn by the page's two SVG paths (lips, the dark inside) and named in ``label``. */
  static inPage(lipsId: string, insideId: string, label: HTMLElement): Mouth {
    const path = (id: string): SVGPathElement => {
      const found = document.getElementById(id);
      if (!(found instanceof SVGPathElement)) throw new Error(`the page has no SVG path #${id}`);
      return found;
    };
    return new Mouth(path(lipsId), path(insideId), label);
  }

  /** A visemes event of the WebSocket transport: its chunk plays right after what is queued. */
  queued(event: VisemesEvent, now: number): void {
    this.events += 1;
    const start = Math.max(now, this.queueEnd);
    const total = event.visemes.reduce((sum, cue) => sum + cue.duration_ms, 0);
    this.schedule(event, start);
    this.queueEnd = start + total;
    this.run();
  }

  /** A visemes event of the WebRTC transport: placed on its item's timeline once that plays. */
  timed(event: VisemesEvent, now: number): void {
    this.events += 1;
    if (!this.playing) {
      this.waiting.push(event);
      return;
    }
    this.place(event, now);
  }

  /** output_audio_buffer.started: the track began playing the answer now. */
  started(now: number): void {
    this.playing = true;
    for (const event of this.waiting.splice(0)) this.place(event, now);
  }

  /** The answer's audio was dropped or ended: rest the mouth. */
  clear(): void {
    this.cues = [];
    this.waiting = [];
    this.anchors.clear();
    this.queueEnd = 0;
    this.playing = false;
    this.draw('sil');
  }

  private place(event: VisemesEvent, now: number): void {
    let anchor = this.anchors.get(event.item_id);
    if (anchor === undefined) {
      anchor = now - event.audio_start_ms;
      this.anchors.set(event.item_id, anchor);
    }
    this.schedule(event, anchor + event.audio_start_ms);
    this.run();
  }

  private schedule(event: VisemesEvent, start: number): void {
    for (const cue of event.visemes) {
      this.cues.push({ from: start + cue.start_ms, to: start + cue.start_ms + cue.duration_ms, viseme: cue.viseme });
    }
  }

  private run(): void {
    if (this.frame) return;
    const tick = (): void => {
      const now = performance.now();
      this.cues = this.cues.filter((cue) => cue.to > now);
      const current = this.cues.find((cue) => cue.from <= now);
      this.draw(current?.viseme ?? 'sil');
      this.frame = this.cues.length ? requestAnimationFrame(tick) : 0;
    };
    this.frame = requestAnimationFrame(tick);
  }

  private draw(viseme: string): void {
    if (viseme === this.shown && this.lips.getAttribute('d')) return;
    this.shown = viseme;
    const [open, wide] = SHAPES[viseme] ?? SHAPES.sil;
    const half = 12 + wide * 36;
    const upper = 4 + open * 10;
    const lower = 4 + open * 26;
    const left = 50 - half;
    const right = 50 + half;
    this.lips.setAttribute(
      'd',
      `M ${left} 30 Q 50 ${30 - upper - 6} ${right} 30 Q 50 ${30 + lower + 8} ${left} 30 Z`,
    );
    this.inside.setAttribute(
      'd',
      open > 0 ? `M ${left + 6} 30 Q 50 ${30 - upper} ${right - 6} 30 Q 50 ${30 + lower} ${left + 6} 30 Z` : '',
    );
    this.label.textContent = viseme;
  }
}
