import { describe, expect, it } from "vitest";
import { answerFailure, BODY_MAX, durationText, inputText, notificationOf, pendingOf, safePath } from "../push/notify";

const perm = {
  kind: "permission",
  session_id: "K7QZ3XH2M4A5B6C7D2E3F4G5H6",
  session_title: "Fix the parser",
  request_id: "req-1",
  tool_name: "Bash",
  input: { command: "rm -rf build && make", description: "Rebuild" },
  input_truncated: false,
  token: "tok",
  expires_at: "2026-11-27T07:00:00Z",
  pending: 2,
  url: "/s/K7QZ3XH2M4A5B6C7D2E3F4G5H6?perm=req-1",
};

describe("notificationOf", () => {
  it("shows a Bash request with its command, Allow and Deny, tagged by the request, until answered", () => {
    const n = notificationOf(perm)!;
    expect(n.title).toBe("Bash in Fix the parser");
    expect(n.options.body).toBe("rm -rf build && make");
    expect(n.options.tag).toBe("req-1");
    expect(n.options.requireInteraction).toBe(true);
    expect(n.options.actions).toEqual([
      { action: "allow", title: "Allow" },
      { action: "deny", title: "Deny" },
    ]);
    expect(n.options.data).toMatchObject({ token: "tok", request_id: "req-1", url: perm.url });
  });

  it("shows other tools' whole input, one field a line", () => {
    const n = notificationOf({ ...perm, tool_name: "Edit", input: { file_path: "/a/b.go", old_string: "x := 1\ny", replace_all: false } })!;
    expect(n.title).toBe("Edit in Fix the parser");
    expect(n.options.body).toBe("file_path: /a/b.go\nold_string: x := 1\ny\nreplace_all: false");
  });

  it("offers only Open for a truncated input, or without a token (never approve what was not shown)", () => {
    for (const p of [{ ...perm, input: '{"command":"echo aaaa', input_truncated: true }, { ...perm, token: "" }]) {
      const n = notificationOf(p)!;
      expect(n.options.actions).toEqual([{ action: "open", title: "Open" }]);
    }
    const t = notificationOf({ ...perm, input: '{"command":"echo aaaa', input_truncated: true })!;
    expect(t.options.body).toMatch(/^\{"command":"echo aaaa…\n\(too long/);
    // The server's preview ends in … already: not twice.
    expect(notificationOf({ ...perm, input: '{"command":"echo b…', input_truncated: true })!.options.body).toMatch(/^\{"command":"echo b…\n/);
  });

  it("names an untitled session and keeps a foreign url out", () => {
    const n = notificationOf({ ...perm, session_title: "  ", url: "https://evil.example/x" })!;
    expect(n.title).toBe("Bash in Untitled session");
    expect((n.options.data as any).url).toBe(`/s/${perm.session_id}`);
  });

  it("shows a turn's end with its duration and cost, a test, nothing for resolved, something for junk", () => {
    const t = notificationOf({ kind: "turn_ended", session_id: "S", session_title: "Long job", duration_ms: 185000, cost_usd: 0.4321, status: "success", url: "/s/S", pending: 0 })!;
    expect(t.title).toBe("Turn finished in Long job");
    expect(t.options.body).toBe("The turn finished after 3 min 5 s · $0.43.");
    expect(t.options.requireInteraction).toBe(false);
    expect(t.options.actions).toEqual([]);
    const e = notificationOf({ kind: "turn_ended", session_id: "S", status: "error_max_turns", duration_ms: 61000 })!;
    expect(e.title).toBe("Turn ended (error_max_turns) in Untitled session");
    expect(notificationOf({ kind: "turn_ended", session_id: "S", status: "interrupted" })!.title).toBe("Turn was interrupted in Untitled session");
    expect(notificationOf({ kind: "turn_ended", session_id: "S", status: "error" })!.options.body).toBe("The turn failed.");
    expect(notificationOf({ kind: "test", pending: 0 })!.options.body).toMatch(/Test notification/);
    expect(notificationOf({ kind: "resolved", request_id: "req-1", pending: 1 })).toBeNull();
    for (const junk of [null, "x", 42, { kind: "nope" }]) expect(notificationOf(junk)!.title).toBe("svc-code");
  });
});

describe("push helpers", () => {
  it("cuts very long bodies", () => {
    const s = inputText("Bash", { command: "x".repeat(BODY_MAX + 50) });
    expect(s.length).toBe(BODY_MAX);
    expect(s.endsWith("…")).toBe(true);
  });
  it("formats durations", () => {
    expect([0, 42_000, 60_000, 3_599_000, 3_600_000, 3_720_000].map(durationText)).toEqual(["0 s", "42 s", "1 min", "59 min 59 s", "1 h", "1 h 2 min"]);
  });
  it("reads the pending count", () => {
    expect(pendingOf({ pending: 3 })).toBe(3);
    expect(pendingOf({ pending: 0 })).toBe(0);
    expect(pendingOf({ pending: -1 })).toBeNull();
    expect(pendingOf({})).toBeNull();
    expect(pendingOf(null)).toBeNull();
  });
  it("accepts same-origin paths only", () => {
    expect(safePath("/s/X?perm=1")).toBe("/s/X?perm=1");
    for (const bad of ["//evil.example", "https://evil.example", "javascript:alert(1)", "/\\evil", 7, undefined]) expect(safePath(bad)).toBe("/");
  });
  it("says why an answer from a notification did not count", () => {
    expect(answerFailure(200, null, "allow")).toBeNull();
    expect(answerFailure(410, { error: "gone" }, "allow")).toEqual({ title: "Allow not used", body: expect.stringMatching(/already answered/) });
    expect(answerFailure(403, { error: "forbidden" }, "deny")!.title).toBe("Deny refused");
    expect(answerFailure(0, null, "allow")!.body).toMatch(/could not be reached/);
    expect(answerFailure(500, { message: "boom" }, "allow")!.body).toBe("The server answered 500: boom.");
  });
});

describe("settings: notifications helpers", async () => {
  const { b64urlBytes, pushUnsupported } = await import("../panes/settings/Notifications");
  it("decodes a base64url key with or without padding", () => {
    expect(Array.from(b64urlBytes("AQID-_8"))).toEqual([1, 2, 3, 251, 255]);
    expect(Array.from(b64urlBytes("AQID-_8="))).toEqual([1, 2, 3, 251, 255]);
    expect(b64urlBytes("B" + "A".repeat(86)).length).toBe(65);
  });
  it("says why a browser cannot get pushes", () => {
    const nav = (ua: string, sw = true) => (sw ? { userAgent: ua, serviceWorker: {} } : { userAgent: ua }) as unknown as Navigator;
    expect(pushUnsupported({ isSecureContext: false, navigator: nav("x") })).toMatch(/HTTPS/);
    expect(pushUnsupported({ isSecureContext: true, navigator: nav("iPhone", false) })).toMatch(/Home Screen/);
    expect(pushUnsupported({ isSecureContext: true, navigator: nav("Firefox", false) })).toMatch(/no Push API/);
    expect(pushUnsupported({ isSecureContext: true, navigator: nav("Chrome"), PushManager: {}, Notification: {} })).toBeNull();
  });
});
