// Sends one prompt to a session from outside its chat (the Costs pane's
// "Send again"): there is no HTTP prompt route, so this takes the composer's
// path, a `user_message` on the session's /chat socket, on a socket of its own
// that lives for this one prompt. It joins with after_line = the session's
// last line (nothing of the log is replayed), sends once `connected` came,
// and reports what the server said: stored (the prompt's id, as
// user_message_stored gives it), queued behind a running turn
// (user_message_queued), or refused (an error frame). Closing the socket
// afterwards does not stop the turn: the agent process is the session's.

import { ApiError, get, q, wsURL } from "../lib/api";
import type { Session } from "../protocol/types";

export type SendOutcome = { kind: "stored"; promptId: string; line: number; session: Session } | { kind: "queued"; queueId: string; session: Session };

export function sendPromptOnce(sessionId: string, content: string, timeoutMs = 15_000, WS: typeof WebSocket = WebSocket): Promise<SendOutcome> {
  return get<Session>(`/api/session/${q(sessionId)}`).then(
    (session) =>
      new Promise<SendOutcome>((resolve, reject) => {
        const ws = new WS(wsURL(`/chat?session=${q(sessionId)}&after_line=${session.last_line ?? 0}`));
        let sent = false;
        let settled = false;
        const finish = (f: () => void) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          f();
          try {
            ws.close(1000, "sent");
          } catch {
            /* closed */
          }
        };
        const unknown = (why: string) =>
          sent ? `${why}; the prompt may have been stored: look at the session's chat before sending it again` : `${why}; nothing was sent`;
        const timer = setTimeout(() => finish(() => reject(new ApiError(0, "timeout", unknown("the server did not answer in time")))), timeoutMs);
        ws.onmessage = (ev) => {
          let f: any;
          try {
            f = JSON.parse(String(ev.data));
          } catch {
            return;
          }
          if (f.type === "connected" && !sent) {
            sent = true;
            ws.send(JSON.stringify({ type: "user_message", content }));
          } else if (f.type === "user_message_stored" && sent) {
            const line = Number(String(f.promptId).slice(String(f.promptId).lastIndexOf(":") + 1));
            finish(() => resolve({ kind: "stored", promptId: f.promptId, line, session }));
          } else if (f.type === "user_message_queued" && sent) {
            finish(() => resolve({ kind: "queued", queueId: f.queue_id, session }));
          } else if (f.type === "error" && sent) {
            finish(() => reject(new ApiError(0, "refused", `the session refused the prompt: ${f.message}`)));
          }
        };
        ws.onclose = (ev) => finish(() => reject(new ApiError(0, "closed", unknown(`the connection closed (${ev.code}${ev.reason ? " " + ev.reason : ""})`))));
        ws.onerror = () => {
          /* onclose follows */
        };
      }),
  );
}
