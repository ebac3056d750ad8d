import { describe, expect, it } from "vitest";
import { Capture } from "../panes/terminal/hook";
import { nextTerminalId, sessionTerminals, terminalId, terminalNumber } from "../panes/terminal/ids";
import { keySequence, withCtrl } from "../panes/terminal/keys";

const SID = "K7QZ3XH2M4A5B6C7D2E3F4G5H6";

describe("terminal ids", () => {
  it("numbers the session's own terminal 1 and <sid>:n the others", () => {
    expect(terminalNumber(SID, SID)).toBe(1);
    expect(terminalNumber(SID, `${SID}:2`)).toBe(2);
    expect(terminalNumber(SID, `${SID}:1`)).toBe(0);
    expect(terminalNumber(SID, `${SID}:02`)).toBe(0);
    expect(terminalNumber(SID, `${SID}:x`)).toBe(0);
    expect(terminalNumber(SID, `${SID}X`)).toBe(0);
    expect(terminalId(SID, 1)).toBe(SID);
    expect(terminalId(SID, 3)).toBe(`${SID}:3`);
  });
  it("lists the session's terminals from /api/terminals and those open here, in order", () => {
    const listed = [{ session: `${SID}:3` }, { session: "OTHERSESSION22" }, { session: SID }];
    expect(sessionTerminals(SID, listed, [`${SID}:2`, `${SID}:3`])).toEqual([SID, `${SID}:2`, `${SID}:3`]);
    expect(nextTerminalId(SID, [SID, `${SID}:3`])).toBe(`${SID}:2`);
    expect(nextTerminalId(SID, [SID, `${SID}:2`])).toBe(`${SID}:3`);
    expect(nextTerminalId(SID, [`${SID}:2`])).toBe(SID);
  });
});

describe("key bar", () => {
  it("sends arrows by the cursor mode and Shift+Tab as CSI Z", () => {
    expect(keySequence("Up", false)).toBe("\x1b[A");
    expect(keySequence("Up", true)).toBe("\x1bOA");
    expect(keySequence("Left", false)).toBe("\x1b[D");
    expect(keySequence("ShiftTab", false)).toBe("\x1b[Z");
    expect(keySequence("Esc", false)).toBe("\x1b");
    expect(keySequence("|", false)).toBe("|");
  });
  it("the sticky Ctrl makes control characters", () => {
    expect(withCtrl("c")).toBe("\x03");
    expect(withCtrl("C")).toBe("\x03");
    expect(withCtrl("[")).toBe("\x1b");
    expect(withCtrl("?")).toBe("\x7f");
    expect(withCtrl(" ")).toBe("\x00");
    expect(withCtrl("\x1b[A")).toBe("\x1b[A");
    expect(withCtrl("1")).toBe("1");
  });
});

describe("capture (the test hook's byte count and hash)", () => {
  const fnv = (s: string) => {
    let h = 0x811c9dc5;
    for (const b of new TextEncoder().encode(s)) h = Math.imul(h ^ b, 0x01000193);
    return h >>> 0;
  };
  it("counts and hashes from after the begin marker through the end marker, markers split across chunks", () => {
    const stream = "cat f\r\nBEGIN-x\r\nline one\r\nline two\r\nEND-x\r\n$ ";
    const want = "\r\nline one\r\nline two\r\nEND-x";
    for (const size of [1, 2, 3, 5, 7, 100]) {
      const c = new Capture("BEGIN-x", "END-x");
      const b = new TextEncoder().encode(stream);
      for (let i = 0; i < b.length; i += size) c.feed(b.subarray(i, i + size));
      expect([size, c.state, c.bytes, c.hash]).toEqual([size, "done", want.length, fnv(want)]);
    }
  });
});
