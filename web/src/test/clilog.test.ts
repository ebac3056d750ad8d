import { describe, expect, it } from "vitest";
import type { StoredMessage } from "../protocol/types";
import { appendFollow, byLine, firstPage, followBackoff, prependPage } from "../state/clilog";
import { SessionStore } from "../state/session";

const msg = (line: number, text = `m${line}`): StoredMessage => ({ sid: "T", line, kind: "agent", payload: { type: "assistant", message: { content: [{ type: "text", text }] } } });
const lines = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => msg(a + i));

describe("a terminal session's pages", () => {
  it("opens on the newest page and puts earlier pages in front, each line once", () => {
    let log = firstPage({ messages: lines(201, 300), start: 20000, end: 30000, size: 30000, has_more_before: true });
    expect(log.hasMoreBefore).toBe(true);
    const next = prependPage(log, { messages: lines(1, 200), start: 0, end: 20000, size: 30000, has_more_before: false });
    expect(next).not.toBeNull();
    log = next!;
    expect(log.messages.map((m) => m.line)).toEqual(lines(1, 300).map((m) => m.line));
    expect(log.start).toBe(0);
    expect(log.end).toBe(30000);
    expect(log.hasMoreBefore).toBe(false);
  });
  it("drops the lines of an overlapping earlier page that it holds already", () => {
    const log = firstPage({ messages: lines(5, 9), start: 500, end: 900, size: 900, has_more_before: true });
    const next = prependPage(log, { messages: lines(1, 6), start: 0, end: 600, size: 900, has_more_before: false })!;
    expect(next.messages.map((m) => m.line)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(next.messages[4]).toBe(log.messages[0]);
  });
  it("refuses an earlier page that does not reach the first record held (the file changed)", () => {
    const log = firstPage({ messages: lines(5, 9), start: 500, end: 900, size: 900, has_more_before: true });
    expect(prependPage(log, { messages: lines(1, 3), start: 0, end: 300, size: 900 })).toBeNull();
    expect(prependPage(log, { messages: lines(6, 7), start: 600, end: 700, size: 900 })).toBeNull();
  });
  it("has nothing before a first page that starts the file", () => {
    expect(firstPage({ messages: lines(1, 3), start: 0, end: 300, size: 300, has_more_before: true }).hasMoreBefore).toBe(false);
  });
  it("follows appended records, once each, and moves its end", () => {
    const log = firstPage({ messages: lines(1, 3), start: 0, end: 300, size: 300 });
    const a = appendFollow(log, { messages: lines(4, 5), start: 300, end: 500, size: 500 })!;
    expect(a.added.map((m) => m.line)).toEqual([4, 5]);
    expect(a.log.end).toBe(500);
    expect(a.log.messages).toHaveLength(5);
    // An empty answer (the wait ran out) changes nothing.
    const b = appendFollow(a.log, { messages: [], start: 500, end: 500, size: 500 })!;
    expect(b.added).toEqual([]);
    expect(b.log.messages).toBe(a.log.messages);
    expect(b.log.end).toBe(500);
  });
  it("refuses appended records that do not start where the log ends", () => {
    const log = firstPage({ messages: lines(1, 3), start: 0, end: 300, size: 300 });
    expect(appendFollow(log, { messages: lines(5, 6), start: 420, end: 600, size: 600 })).toBeNull();
  });
  it("sorts by line and keeps the first of a line given twice", () => {
    const a = msg(2, "first");
    expect(byLine([msg(3), a, msg(2, "second"), msg(1)]).map((m) => [m.line, (m.payload as any).message.content[0].text])).toEqual([
      [1, "m1"],
      [2, "first"],
      [3, "m3"],
    ]);
  });
  it("backs off, up to 30 s", () => {
    expect([1, 2, 3, 4, 10].map(followBackoff)).toEqual([1000, 2000, 4000, 8000, 30000]);
  });
});

describe("a terminal session's records in the session reducer", () => {
  it("shows unknown records raw and parse errors with file and line, with no gap for skipped lines", () => {
    const s = new SessionStore("T", undefined, { gaps: false });
    s.loadMessages([
      { sid: "T:1", line: 1, kind: "user_prompt", payload: { role: "user", content: "hello" } },
      { sid: "T:2", line: 2, kind: "agent", payload: { type: "raw_record", record: { type: "file-history-snapshot", x: 1 } } },
      { sid: "T:4", line: 4, kind: "notice", payload: { type: "parse_error", file: "-p/abc.jsonl", line: 4, error: "unexpected end of JSON input" } },
      { sid: "T:5", line: 5, kind: "agent", payload: { type: "raw_record", record: "not json at all" } },
    ]);
    const bl = s.allBlocks();
    expect(bl.map((b) => b.kind)).toEqual(["user", "json", "notice", "json"]);
    expect(bl[1].kind === "json" && bl[1].label).toBe("unknown record (file-history-snapshot)");
    expect(bl[1].kind === "json" && bl[1].value).toEqual({ type: "file-history-snapshot", x: 1 });
    expect(bl[2].kind === "notice" && [bl[2].label, bl[2].tone, bl[2].text]).toEqual(["parse error", "error", "-p/abc.jsonl, line 4: unexpected end of JSON input"]);
    expect(bl[3].kind === "json" && bl[3].label).toBe("unknown record (text)");
    expect(bl.map((b) => b.sid)).toEqual(["T:1", "T:2", "T:4", "T:5"]);
  });
  it("a live session's log still shows a gap", () => {
    const s = new SessionStore("T");
    s.loadMessages([msg(1), msg(3)]);
    expect(s.allBlocks().map((b) => b.kind)).toEqual(["text", "gap", "text"]);
  });
});
