import { signal } from "@preact/signals";
import { describe, expect, it, vi } from "vitest";
import { badgeLabel, drawBadge, startBadge, type BadgeCanvas } from "../lib/badge";

/** A canvas context that records what is drawn. */
function recorder() {
  const calls: any[][] = [];
  const rec = (name: string) => (...args: any[]) => calls.push([name, ...args]);
  const ctx = {
    clearRect: rec("clearRect"),
    drawImage: rec("drawImage"),
    beginPath: rec("beginPath"),
    arc: rec("arc"),
    fill: () => calls.push(["fill", ctx.fillStyle]),
    fillRect: (...a: any[]) => calls.push(["fillRect", ctx.fillStyle, ...a]),
    fillText: (...a: any[]) => calls.push(["fillText", ctx.fillStyle, ctx.font, ctx.textAlign, ctx.textBaseline, ...a]),
    fillStyle: "" as any,
    font: "",
    textAlign: "start" as CanvasTextAlign,
    textBaseline: "alphabetic" as CanvasTextBaseline,
  };
  return { ctx: ctx as unknown as BadgeCanvas, calls };
}

describe("favicon badge", () => {
  it("labels counts", () => {
    expect([0, -1, NaN, 1, 9, 10, 250].map(badgeLabel)).toEqual(["", "", "", "1", "9", "9+", "9+"]);
  });

  it("draws the icon alone for no request", () => {
    const { ctx, calls } = recorder();
    const icon = {} as CanvasImageSource;
    drawBadge(ctx, 64, 0, icon);
    expect(calls).toEqual([
      ["clearRect", 0, 0, 64, 64],
      ["drawImage", icon, 0, 0, 64, 64],
    ]);
  });

  it("draws a red disc at the top right with the count in white", () => {
    const { ctx, calls } = recorder();
    drawBadge(ctx, 64, 3, null);
    const r = 64 * 0.34;
    expect(calls[1][0]).toBe("fillRect"); // the icon has not loaded: a plain square
    expect(calls).toContainEqual(["arc", 64 - r, r, r, 0, 2 * Math.PI]);
    expect(calls).toContainEqual(["fill", "#d92d20"]);
    const text = calls.find((c) => c[0] === "fillText")!;
    expect(text.slice(1, 6)).toEqual(["#ffffff", `bold ${Math.round(r * 1.4)}px system-ui, sans-serif`, "center", "middle", "3"]);
    expect(text[6]).toBeCloseTo(64 - r);
  });

  it("writes 9+ smaller for ten and more", () => {
    const { ctx, calls } = recorder();
    drawBadge(ctx, 32, 12, null);
    const text = calls.find((c) => c[0] === "fillText")!;
    expect(text[5]).toBe("9+");
    expect(text[2]).toBe(`bold ${Math.round(32 * 0.34 * 1.05)}px system-ui, sans-serif`);
  });

  it("sets and clears the app badge with the count", () => {
    const setAppBadge = vi.fn(async () => {});
    const clearAppBadge = vi.fn(async () => {});
    Object.assign(navigator, { setAppBadge, clearAppBadge });
    const n = signal(0);
    const stop = startBadge(n);
    expect(clearAppBadge).toHaveBeenCalledTimes(1);
    n.value = 4;
    expect(setAppBadge).toHaveBeenLastCalledWith(4);
    n.value = 0;
    expect(clearAppBadge).toHaveBeenCalledTimes(2);
    stop();
    n.value = 5;
    expect(setAppBadge).toHaveBeenCalledTimes(1);
  });
});
