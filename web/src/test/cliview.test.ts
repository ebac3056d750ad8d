import { afterEach, describe, expect, it, vi } from "vitest";
import type { StoredMessage } from "../protocol/types";
import { CliView } from "../state/cli";

const msg = (line: number): StoredMessage => ({ sid: `T:${line}`, line, kind: "agent", payload: { type: "assistant", message: { content: [{ type: "text", text: `m${line}` }] } } });
const lines = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => msg(a + i));
const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status });
const info = { provider: "claude", id: "T", project: "/p", title: "hello", last_activity: "2026-11-27T05:00:00Z", size: 3000 };

/** A server over the stubbed fetch: route(url) answers, or a long poll waits for release(). */
function serve(route: (u: URL) => Response | "wait") {
  const calls: string[] = [];
  const waiting: ((r: Response) => void)[] = [];
  vi.stubGlobal(
    "fetch",
    vi.fn(async (url: string, init?: RequestInit) => {
      calls.push(url);
      const r = route(new URL(url, "http://x"));
      if (r !== "wait") return r;
      return new Promise<Response>((resolve, reject) => {
        waiting.push(resolve);
        init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
      });
    }),
  );
  return { calls, release: (r: Response) => waiting.shift()?.(r), waiting };
}

afterEach(() => vi.unstubAllGlobals());

const text = (v: CliView) => v.store.peek().allBlocks().map((b) => (b.kind === "text" ? b.text.peek() : b.kind));

describe("CliView", () => {
  it("opens on the newest page, puts the earlier page in front, and follows appended records", async () => {
    const srv = serve((u) => {
      if (!u.pathname.endsWith("/messages")) return json(info);
      if (u.searchParams.get("after")) return "wait";
      if (u.searchParams.get("before") === "2000") return json({ messages: lines(1, 20), start: 0, end: 2000, size: 3000, has_more_before: false });
      return json({ messages: lines(21, 30), start: 2000, end: 3000, size: 3000, has_more_before: true });
    });
    const v = new CliView({ provider: "claude", id: "T" });
    await v.open();
    expect(v.info.value?.title).toBe("hello");
    expect(text(v)).toEqual(lines(21, 30).map((m) => `m${m.line}`));
    expect(v.hasMoreBefore.value).toBe(true);
    await vi.waitFor(() => expect(srv.waiting).toHaveLength(1));
    expect(srv.calls.at(-1)).toContain("/api/cli-sessions/claude/T/messages?after=3000&wait=25");

    await v.loadOlder();
    expect(text(v)).toEqual(lines(1, 30).map((m) => `m${m.line}`));
    expect(v.hasMoreBefore.value).toBe(false);

    srv.release(json({ messages: lines(31, 32), start: 3000, end: 3200, size: 3200 }));
    await vi.waitFor(() => expect(text(v)).toHaveLength(32));
    await vi.waitFor(() => expect(srv.calls.at(-1)).toContain("after=3200"));
    expect(v.size.value).toBe(3200);
    v.close();
  });

  it("reads the end again when the file was replaced (409)", async () => {
    let replaced = false;
    const srv = serve((u) => {
      if (!u.pathname.endsWith("/messages")) return json(info);
      if (u.searchParams.get("after")) return replaced ? "wait" : ((replaced = true), json({ error: "conflict", message: "the file shrank" }, 409));
      return replaced ? json({ messages: lines(1, 2), start: 0, end: 100, size: 100 }) : json({ messages: lines(1, 5), start: 0, end: 500, size: 500 });
    });
    const v = new CliView({ provider: "codex", id: "T" });
    await v.open();
    await vi.waitFor(() => expect(v.reloaded.value).toMatch(/replaced/));
    expect(text(v)).toEqual(["m1", "m2"]);
    await vi.waitFor(() => expect(srv.calls.at(-1)).toContain("after=100"));
    v.close();
  });

  it("says an unknown session is not there", async () => {
    serve(() => json({ error: "not_found", message: "no such session" }, 404));
    const v = new CliView({ provider: "claude", id: "nope" });
    await v.open();
    expect(v.error.value).toMatch(/no such terminal session/i);
    v.close();
  });
});
