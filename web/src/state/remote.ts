// Answering a permission request of a session that is not open in this tab
// (from the inbox): a short-lived /chat socket that joins the session from
// its last line, sends the answer, and waits for permission_resolved.

import { q, wsURL } from "../lib/api";
import { deviceLabel } from "../lib/format";
import type { ChatFrame, ClientMessage } from "../protocol/types";

export type RemoteAnswer = Extract<ClientMessage, { type: "permission_response" }>;

export function answerRemote(sessionId: string, afterLine: number, msg: Omit<RemoteAnswer, "answered_by">, WS: typeof WebSocket = WebSocket, timeoutMs = 15000): Promise<{ ok: boolean; reason?: string }> {
  return new Promise((resolve) => {
    let done = false;
    const ws = new WS(wsURL(`/chat?session=${q(sessionId)}&after_line=${Math.max(0, afterLine)}`));
    const finish = (r: { ok: boolean; reason?: string }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try {
        ws.close(1000);
      } catch {
        /* closed */
      }
      resolve(r);
    };
    const timer = setTimeout(() => finish({ ok: false, reason: "no answer from the server in time" }), timeoutMs);
    ws.onmessage = (ev) => {
      let f: ChatFrame;
      try {
        f = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (f.type === "connected") ws.send(JSON.stringify({ ...msg, answered_by: deviceLabel() }));
      else if (f.type === "permission_resolved" && f.request_id === msg.request_id) finish({ ok: f.ok, reason: f.ok ? undefined : f.reason || "the request had expired or was answered already" });
      else if (f.type === "error") finish({ ok: false, reason: f.message });
    };
    ws.onclose = () => finish({ ok: false, reason: "the connection closed" });
  });
}
