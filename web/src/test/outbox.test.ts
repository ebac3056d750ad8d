import { describe, expect, it } from "vitest";
import { memoryKV, Outbox } from "../state/outbox";
import type { StoredMessage } from "../protocol/types";

function setup(kv = memoryKV()) {
  const sent: string[] = [];
  const log: StoredMessage[] = [];
  const queue: string[] = [];
  let open = false;
  let line = 10;
  const box = new Outbox("S", {
    kv,
    send: (m) => (open ? (sent.push(m.content), true) : false),
    lastLine: () => line,
    logSince: async (since) => log.filter((m) => m.line > since),
    queued: () => queue,
  });
  return {
    box,
    sent,
    log,
    queue,
    kv,
    setOpen: (v: boolean) => (open = v),
    setLine: (v: number) => (line = v),
  };
}

describe("Outbox", () => {
  it("keeps prompts written offline, in IndexedDB, and sends them in order once connected", async () => {
    const t = setup();
    await t.box.add("first");
    await t.box.add("second");
    expect(t.sent).toEqual([]);
    expect(t.box.items.value.map((i) => [i.content, i.state])).toEqual([
      ["first", "waiting"],
      ["second", "waiting"],
    ]);
    expect(t.kv.data.get("outbox:S")).toHaveLength(2);
    t.setOpen(true);
    await t.box.reconnected();
    expect(t.sent).toEqual(["first", "second"]);
    await t.box.acknowledged();
    await t.box.acknowledged();
    expect(t.box.items.value).toEqual([]);
    expect(t.kv.data.get("outbox:S")).toEqual([]);
  });

  it("survives a reload: a new page finds the waiting prompts", async () => {
    const t = setup();
    await t.box.add("written before the reload");
    const t2 = setup(t.kv);
    await t2.box.ready();
    t2.setOpen(true);
    await t2.box.reconnected();
    expect(t2.sent).toEqual(["written before the reload"]);
  });

  it("does not send twice a prompt the server stored before the socket dropped", async () => {
    const t = setup();
    t.setOpen(true);
    await t.box.add("stored but not acknowledged");
    expect(t.sent).toHaveLength(1);
    // The socket drops before user_message_stored; the log has the prompt.
    t.setOpen(false);
    t.log.push({ sid: "S:11", line: 11, kind: "user_prompt", payload: { role: "user", content: "stored but not acknowledged" } });
    t.setOpen(true);
    await t.box.reconnected();
    expect(t.sent).toHaveLength(1);
    expect(t.box.items.value).toEqual([]);
  });

  it("does not send twice a prompt the server queued", async () => {
    const t = setup();
    t.setOpen(true);
    await t.box.add("queued behind a turn");
    t.queue.push("queued behind a turn");
    await t.box.reconnected();
    expect(t.sent).toHaveLength(1);
    expect(t.box.items.value).toEqual([]);
  });

  it("sends again a prompt the server never got, and an older identical prompt does not count", async () => {
    const t = setup();
    t.log.push({ sid: "S:5", line: 5, kind: "user_prompt", payload: { role: "user", content: "same text" } });
    t.setOpen(true);
    await t.box.add("same text"); // sent after line 10
    t.setOpen(true);
    await t.box.reconnected();
    expect(t.sent).toEqual(["same text", "same text"]);
  });

  it("leaves sent prompts alone when the log cannot be read (no blind re-send)", async () => {
    const t = setup();
    t.setOpen(true);
    await t.box.add("x");
    const box2 = new Outbox("S", { kv: t.kv, send: (m) => (t.sent.push(m.content), true), lastLine: () => 10, logSince: async () => Promise.reject(new Error("down")) });
    await box2.ready();
    await box2.reconnected();
    expect(t.sent).toEqual(["x"]);
    expect(box2.items.value.map((i) => i.state)).toEqual(["sent"]);
  });

  it("lets a waiting prompt be cancelled", async () => {
    const t = setup();
    await t.box.add("never mind");
    await t.box.remove(t.box.items.value[0].id);
    t.setOpen(true);
    await t.box.reconnected();
    expect(t.sent).toEqual([]);
  });
});
