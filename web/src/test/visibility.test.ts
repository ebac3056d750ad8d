import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { LiveSession, visibilityMessage } from "../state/live";
import { FakeWS } from "./fakews";

// No IndexedDB here: the outbox keeps its prompts in memory.
vi.mock("../state/outbox", async (importOriginal) => {
  const m = await importOriginal<typeof import("../state/outbox")>();
  return { ...m, idbKV: m.memoryKV() };
});

const visibility = (ws: FakeWS) => ws.messages().filter((m) => m.type === "visibility").map((m) => m.visible);
let state: DocumentVisibilityState = "visible";

function setVisibility(v: DocumentVisibilityState) {
  state = v;
  document.dispatchEvent(new Event("visibilitychange"));
}

describe("visibility on the /chat socket", () => {
  beforeEach(() => {
    FakeWS.all = [];
    state = "visible";
    Object.defineProperty(document, "visibilityState", { configurable: true, get: () => state });
    vi.stubGlobal("WebSocket", FakeWS);
    vi.stubGlobal("fetch", vi.fn(async () => new Response("{}", { status: 200 })));
  });
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it("says visible after connected, then each change of the tab or the pane, and again on a new socket", () => {
    const live = new LiveSession("K7QZ3XH2M4A5B6C7D2E3F4G5H6");
    live.socket.start();
    const ws = FakeWS.all[0];
    ws.open();
    expect(visibility(ws)).toEqual([]); // not before connected
    ws.frame({ type: "connected", agent_running: false, is_compacting: false, permission_mode: "default", provider: "p", provider_locked: false, cwd: "/" });
    expect(visibility(ws)).toEqual([true]);
    setVisibility("hidden");
    expect(visibility(ws)).toEqual([true, false]);
    setVisibility("hidden"); // no change, nothing sent
    expect(visibility(ws)).toEqual([true, false]);
    setVisibility("visible");
    expect(visibility(ws)).toEqual([true, false, true]);
    live.shown.value = false; // another pane of the app is on screen
    expect(visibility(ws)).toEqual([true, false, true, false]);
    live.shown.value = true;
    expect(visibility(ws)).toEqual([true, false, true, false, true]);

    live.socket.reconnect("test");
    const ws2 = FakeWS.all[1];
    ws2.open();
    ws2.frame({ type: "connected", agent_running: false, is_compacting: false, permission_mode: "default", provider: "p", provider_locked: false, cwd: "/" });
    expect(visibility(ws2)).toEqual([true]);
    live.close();
  });

  it("says not visible after connected when the tab is hidden", () => {
    state = "hidden";
    const live = new LiveSession("K7QZ3XH2M4A5B6C7D2E3F4G5H6");
    live.socket.start();
    const ws = FakeWS.all[0];
    ws.open();
    ws.frame({ type: "connected", agent_running: false, is_compacting: false, permission_mode: "default", provider: "p", provider_locked: false, cwd: "/" });
    expect(visibility(ws)).toEqual([false]);
    live.close();
  });

  it("is the documented message", () => {
    expect(visibilityMessage(true)).toEqual({ type: "visibility", visible: true });
  });
});
