// Keyboard shortcuts the app and the terminal pane agree on.

/**
 * Whether a key event opens the command palette: Ctrl+K or ⌘K anywhere, and in
 * the terminal (inTerminal) only ⌘K or Ctrl+Shift+K, Ctrl+K going to the shell.
 */
export function paletteKey(e: KeyboardEvent, inTerminal = false): boolean {
  if (e.type !== "keydown" || e.altKey || e.key.toLowerCase() !== "k") return false;
  if (e.metaKey) return true;
  return e.ctrlKey && (!inTerminal || e.shiftKey);
}
