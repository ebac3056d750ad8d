// The phone key bar's keys and the sticky Ctrl: what each sends to the shell.

export type BarKey = "Esc" | "Tab" | "ShiftTab" | "Up" | "Down" | "Left" | "Right" | "|" | "~" | "/";

/** The bytes of a key bar key; arrows follow the application cursor mode (DECCKM) as a keyboard's do. */
export function keySequence(k: BarKey, appCursor: boolean): string {
  const csi = appCursor ? "\x1bO" : "\x1b[";
  switch (k) {
    case "Esc":
      return "\x1b";
    case "Tab":
      return "\t";
    case "ShiftTab":
      return "\x1b[Z";
    case "Up":
      return csi + "A";
    case "Down":
      return csi + "B";
    case "Right":
      return csi + "C";
    case "Left":
      return csi + "D";
    default:
      return k;
  }
}

/**
 * Ctrl+data, for the sticky Ctrl: a letter or one of @[\]^_ becomes its
 * control character (Ctrl+C is \x03), `?` DEL, space NUL; anything else (an
 * escape sequence, several characters) goes as it is.
 */
export function withCtrl(data: string): string {
  if (data.length !== 1) return data;
  const c = data.charCodeAt(0);
  if (c >= 0x61 && c <= 0x7a) return String.fromCharCode(c - 0x60); // a-z
  if (c >= 0x40 && c <= 0x5f) return String.fromCharCode(c - 0x40); // @ A-Z [ \ ] ^ _
  if (data === "?") return "\x7f";
  if (data === " ") return "\x00";
  return data;
}
