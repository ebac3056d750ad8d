import { describe, expect, it } from "vitest";
import { paletteKey } from "../lib/shortcuts";

const key = (k: string, mods: Partial<KeyboardEventInit> = {}, type = "keydown") => new KeyboardEvent(type, { key: k, ...mods });

describe("the palette's key", () => {
  it("is Ctrl+K or ⌘K outside the terminal", () => {
    expect(paletteKey(key("k", { ctrlKey: true }))).toBe(true);
    expect(paletteKey(key("k", { metaKey: true }))).toBe(true);
    expect(paletteKey(key("K", { ctrlKey: true, shiftKey: true }))).toBe(true);
    expect(paletteKey(key("k"))).toBe(false);
    expect(paletteKey(key("k", { ctrlKey: true, altKey: true }))).toBe(false);
    expect(paletteKey(key("j", { ctrlKey: true }))).toBe(false);
    expect(paletteKey(key("k", { ctrlKey: true }, "keyup"))).toBe(false);
  });

  it("leaves Ctrl+K to the shell in the terminal: ⌘K or Ctrl+Shift+K there", () => {
    expect(paletteKey(key("k", { ctrlKey: true }), true)).toBe(false);
    expect(paletteKey(key("K", { ctrlKey: true, shiftKey: true }), true)).toBe(true);
    expect(paletteKey(key("k", { metaKey: true }), true)).toBe(true);
  });
});
