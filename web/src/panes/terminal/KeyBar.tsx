// The phone key bar (shown on narrow screens and coarse pointers, by CSS):
// keys a phone keyboard lacks. Ctrl is sticky: the next key, from the bar or
// the keyboard, is sent as Ctrl+key. The buttons keep the focus in the
// terminal (a tap would otherwise close the phone's keyboard).

import type { Signal } from "@preact/signals";
import { keySequence, withCtrl, type BarKey } from "./keys";
import type { TermHandle } from "./TermView";

// In two rows of seven on a phone: Ctrl first, Paste last.
const KEYS: { key: BarKey; label: string; name: string }[] = [
  { key: "Esc", label: "Esc", name: "Esc" },
  { key: "Tab", label: "Tab", name: "Tab" },
  { key: "ShiftTab", label: "⇧Tab", name: "Shift+Tab" },
  { key: "|", label: "|", name: "Pipe" },
  { key: "~", label: "~", name: "Tilde" },
  { key: "/", label: "/", name: "Slash" },
  { key: "Left", label: "←", name: "Left" },
  { key: "Up", label: "↑", name: "Up" },
  { key: "Down", label: "↓", name: "Down" },
  { key: "Right", label: "→", name: "Right" },
];

export function KeyBar({ term, ctrl }: { term: TermHandle; ctrl: Signal<boolean> }) {
  const keep = (e: Event) => e.preventDefault(); // the terminal keeps the focus
  const press = (k: BarKey) => {
    let s = keySequence(k, term.appCursor());
    if (ctrl.peek()) {
      ctrl.value = false;
      s = withCtrl(s);
    }
    term.send(s);
    term.focus();
  };
  const paste = async () => {
    let text: string | null = null;
    try {
      text = await navigator.clipboard.readText();
    } catch {
      // No permission (or no clipboard API): ask for the text instead.
      text = prompt("Paste here (the clipboard could not be read):");
    }
    if (text) term.paste(text);
    term.focus();
  };
  return (
    <div class="term-keys" role="toolbar" aria-label="Terminal keys">
      <button type="button" aria-pressed={ctrl.value} onMouseDown={keep} onClick={() => ((ctrl.value = !ctrl.value), term.focus())}>
        Ctrl
      </button>
      {KEYS.map((k) => (
        <button key={k.key} type="button" aria-label={k.name} onMouseDown={keep} onClick={() => press(k.key)}>
          {k.label}
        </button>
      ))}
      <button type="button" onMouseDown={keep} onClick={paste}>
        Paste
      </button>
    </div>
  );
}
