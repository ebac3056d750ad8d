import { describe, expect, it } from "vitest";
import { answerRemote } from "../state/remote";

// A /chat socket that says connected, then resolves what it is sent.
function fakeWS(resolve: (req: any) => any) {
  return class {
    static sent: any[] = [];
    onmessage: ((e: { data: string }) => void) | null = null;
    onclose: (() => void) | null = null;
    constructor(public url: string) {
      setTimeout(() => this.onmessage?.({ data: JSON.stringify({ type: "connected", session_id: "S" }) }));
    }
    send(s: string) {
      const m = JSON.parse(s);
      (this.constructor as any).sent.push(m);
      setTimeout(() => this.onmessage?.({ data: JSON.stringify(resolve(m)) }));
    }
    close() {}
  };
}

describe("answerRemote (the inbox answers a session that is not open)", () => {
  it("joins from the session's last line, answers with a device label, and reports ok", async () => {
    const WS = fakeWS((m) => ({ type: "permission_resolved", request_id: m.request_id, behavior: m.behavior, ok: true }));
    const r = await answerRemote("S", 41, { type: "permission_response", request_id: "r1", behavior: "allow" }, WS as any);
    expect(r).toEqual({ ok: true, reason: undefined });
    expect((WS as any).sent[0]).toMatchObject({ type: "permission_response", request_id: "r1", behavior: "allow" });
    expect(typeof (WS as any).sent[0].answered_by).toBe("string");
  });

  it("says so when the request had expired", async () => {
    const WS = fakeWS((m) => ({ type: "permission_resolved", request_id: m.request_id, behavior: m.behavior, ok: false }));
    const r = await answerRemote("S", 0, { type: "permission_response", request_id: "r1", behavior: "deny" }, WS as any);
    expect(r.ok).toBe(false);
    expect(r.reason).toMatch(/expired/);
  });
});
