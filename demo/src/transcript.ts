// The live transcript: the user's words as they are transcribed, the assistant's as it speaks,
// tool calls, each answer's latency. Entries are keyed by the server's item and response ids.

type Role = 'user' | 'assistant' | 'tool';

interface Entry {
  element: HTMLLIElement;
  text: HTMLParagraphElement;
  meta: HTMLParagraphElement;
}

const WHO: Record<Role, string> = { user: 'You', assistant: 'Assistant', tool: 'Tool' };

export class TranscriptView {
  private readonly items = new Map<string, Entry>();
  private readonly responses = new Map<string, Entry>();
  private readonly calls = new Map<string, Entry>();

  constructor(private readonly list: HTMLOListElement) {}

  clear(): void {
    this.list.replaceChildren();
    this.items.clear();
    this.responses.clear();
    this.calls.clear();
  }

  userStarted(itemId: string): void {
    const entry = this.item(itemId, 'user');
    if (!entry.text.textContent) {
      entry.text.textContent = '…';
      entry.text.classList.add('partial');
    }
  }

  userDelta(itemId: string, delta: string): void {
    const entry = this.item(itemId, 'user');
    const placeholder = entry.text.classList.contains('partial') && entry.text.textContent === '…';
    entry.text.textContent = (placeholder ? '' : entry.text.textContent) + delta;
    entry.text.classList.add('partial');
    this.follow();
  }

  userDone(itemId: string, transcript: string): void {
    const entry = this.item(itemId, 'user');
    if (!transcript.trim()) {
      entry.element.remove();
      this.items.delete(itemId);
      return;
    }
    entry.text.textContent = transcript;
    this.finish(entry);
  }

  assistantDelta(itemId: string, responseId: string, delta: string): void {
    const entry = this.assistant(itemId, responseId);
    entry.text.textContent += delta;
    this.follow();
  }

  assistantDone(itemId: string, responseId: string, transcript: string): void {
    const entry = this.assistant(itemId, responseId);
    entry.text.textContent = transcript;
    this.finish(entry);
  }

  /** The answer's first sound: shows its latency and what it was measured to. */
  latency(responseId: string, itemId: string | undefined, milliseconds: number, measuredTo: string): void {
    const entry = this.assistant(itemId, responseId);
    const badge = document.createElement('span');
    badge.className = 'latency';
    badge.textContent = `${Math.round(milliseconds)} ms`;
    badge.title = `end of your speech (speech_stopped) → ${measuredTo}`;
    entry.meta.prepend(badge);
  }

  interrupted(responseId: string): void {
    const entry = this.responses.get(responseId);
    if (!entry || entry.element.classList.contains('interrupted')) return;
    entry.element.classList.add('interrupted');
    const note = document.createElement('span');
    note.textContent = 'interrupted';
    entry.meta.append(note);
    this.finish(entry);
  }

  toolCall(callId: string, name: string, args: string): void {
    const entry = this.create('tool');
    this.calls.set(callId, entry);
    const code = document.createElement('code');
    code.textContent = `${name}(${args === '{}' ? '' : args})`;
    entry.text.replaceChildren(code, ' running in this page…');
    this.follow();
  }

  toolResult(callId: string, name: string, result: string): void {
    const entry = this.calls.get(callId) ?? this.create('tool');
    const call = document.createElement('code');
    call.textContent = `${name}()`;
    const output = document.createElement('code');
    output.textContent = result;
    entry.text.replaceChildren(call, ' → ', output);
    this.finish(entry);
  }

  private item(itemId: string, role: Role): Entry {
    let entry = this.items.get(itemId);
    if (!entry) {
      entry = this.create(role);
      entry.element.dataset.itemId = itemId;
      this.items.set(itemId, entry);
    }
    return entry;
  }

  private assistant(itemId: string | undefined, responseId: string): Entry {
    const entry =
      (itemId ? this.items.get(itemId) : undefined) ?? this.responses.get(responseId) ?? this.create('assistant');
    if (itemId && !this.items.has(itemId)) {
      this.items.set(itemId, entry);
      entry.element.dataset.itemId = itemId;
    }
    this.responses.set(responseId, entry);
    entry.element.dataset.responseId = responseId;
    return entry;
  }

  private create(role: Role): Entry {
    const element = document.createElement('li');
    element.className = `entry ${role}`;
    element.setAttribute('aria-busy', 'true');
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = WHO[role];
    const text = document.createElement('p');
    text.className = 'text';
    const meta = document.createElement('p');
    meta.className = 'meta';
    element.append(who, text, meta);
    this.list.append(element);
    this.follow();
    return { element, text, meta };
  }

  /** Done changing: screen readers announce it now (aria-busy held it back while it streamed). */
  private finish(entry: Entry): void {
    entry.text.classList.remove('partial');
    entry.element.setAttribute('aria-busy', 'false');
    this.follow();
  }

  /** Keep the newest line in view, unless the reader scrolled up. */
  private follow(): void {
    const box = this.list;
    if (box.scrollHeight - box.scrollTop - box.clientHeight < 80) box.scrollTop = box.scrollHeight;
  }
}
