import { describe, expect, it } from "vitest";
import type { ChatFrame, ConnectedFrame } from "../protocol/types";

const connected = (f: Partial<ConnectedFrame>): ChatFrame => ({ type: "connected", session_id: "S", cwd: "/", home: "/", workspace: "/", is_reconnect: false, agent_running: false, is_compacting: false, provider: "agent-sdk", provider_display_name: "Claude Code", provider_caps: { live_controls: true, images: true, resume: true }, provider_locked: false, permission_mode: "default", queue: [], ...f }) as ChatFrame;
import { outcomeText, PermissionBook } from "../state/permissions";
import { SessionStore } from "../state/session";
import { editableInput, parseEdited, suggestionLabel } from "../ui/Permission";

const req = (id: string, tool = "Bash", input: any = { command: "rm -rf build" }) => ({ type: "permission_request" as const, session_id: "S", request_id: id, tool_name: tool, input, suggestions: [] });

describe("permission state", () => {
  it("retires a card answered in another tab, saying who answered", () => {
    const b = new PermissionBook("Chromium on Linux · tab aaaa");
    b.request(req("r1"));
    expect(b.pending()).toHaveLength(1);
    b.resolved({ type: "permission_resolved", session_id: "S", request_id: "r1", behavior: "allow", ok: true, answered_by: "Safari on iOS · tab bbbb" });
    expect(b.pending()).toHaveLength(0);
    const p = b.items.value[0];
    expect(p.status).toBe("answered");
    expect(outcomeText(p)).toBe("Answered on another device (Safari on iOS · tab bbbb): allowed");
  });

  it("says when a notification answered, and marks the replay's end", () => {
    const b = new PermissionBook("tab A");
    b.request(req("r1"));
    expect(b.synced.value).toBe(false);
    b.beginResync();
    b.endResync();
    expect(b.synced.value).toBe(true);
    b.resolved({ type: "permission_resolved", session_id: "S", request_id: "r1", behavior: "deny", ok: true, answered_by: "notification" });
    expect(outcomeText(b.items.value[0])).toBe("Answered from a notification: denied");
  });

  it("says 'answered here' in the tab that answered", () => {
    const b = new PermissionBook("tab A");
    b.request(req("r1"));
    b.answering("r1");
    expect(b.items.value[0].status).toBe("sending");
    b.resolved({ type: "permission_resolved", session_id: "S", request_id: "r1", behavior: "deny", ok: true, answered_by: "tab A" });
    expect(outcomeText(b.items.value[0])).toBe("Answered here: denied");
  });

  it("says our answer came too late when the request had expired", () => {
    const b = new PermissionBook("tab A");
    b.request(req("r1"));
    b.answering("r1");
    b.resolved({ type: "permission_resolved", session_id: "S", request_id: "r1", behavior: "allow", ok: false });
    expect(b.items.value[0].status).toBe("expired");
    expect(outcomeText(b.items.value[0])).toMatch(/expired/);
  });

  it("gives the server's reason when it retires a request", () => {
    const b = new PermissionBook();
    b.request(req("r1"));
    b.resolved({ type: "permission_resolved", session_id: "S", request_id: "r1", behavior: "", ok: false, reason: "process_exited" });
    expect(outcomeText(b.items.value[0])).toBe("No longer pending: the agent's process ended");
  });

  it("a replayed request after a reload is one card, still pending", () => {
    const b = new PermissionBook();
    b.request(req("r1"));
    b.request({ ...req("r1"), replay: true });
    expect(b.items.value).toHaveLength(1);
    expect(b.pending()).toHaveLength(1);
  });

  it("a request not replayed on reconnect is no longer pending", () => {
    const s = new SessionStore("S");
    s.apply(req("gone"));
    s.apply(req("still"));
    s.apply(connected({ session_id: "S", cwd: "/", is_reconnect: true, agent_running: true, is_compacting: false, provider: "agent-sdk", provider_locked: true, permission_mode: "default" }));
    s.apply({ ...req("still"), replay: true });
    s.apply({ type: "pong" });
    expect(s.perms.pending().map((p) => p.req.request_id)).toEqual(["still"]);
    expect(s.perms.items.value.find((p) => p.req.request_id === "gone")?.status).toBe("retired");
  });

  it("a failed send puts the card back to pending", () => {
    const b = new PermissionBook();
    b.request(req("r1"));
    b.answering("r1");
    b.unsent("r1");
    expect(b.pending()[0].status).toBe("pending");
  });

  it("edits Bash as its command and other tools as JSON", () => {
    expect(editableInput("Bash", { command: "ls -la", description: "list" })).toBe("ls -la");
    expect(parseEdited("Bash", { command: "ls", description: "d" }, "ls /tmp")).toEqual({ value: { command: "ls /tmp", description: "d" } });
    expect(parseEdited("Bash", { command: "ls" }, "  ").error).toBeTruthy();
    expect(parseEdited("Write", { file_path: "/a" }, '{"file_path":"/b","content":"x"}')).toEqual({ value: { file_path: "/b", content: "x" } });
    expect(parseEdited("Write", {}, "{nope").error).toMatch(/JSON/);
    expect(parseEdited("Write", {}, "[1]").error).toMatch(/object/);
  });

  it("names suggestions by what they do", () => {
    expect(suggestionLabel({ type: "addRules", rules: [{ toolName: "Bash", ruleContent: "npm test:*" }], behavior: "allow", destination: "localSettings" })).toBe("Always allow Bash(npm test:*) (this project, local)");
    expect(suggestionLabel({ type: "setMode", mode: "acceptEdits", destination: "session" })).toBe("Allow and switch to acceptEdits (this session)");
  });
});
