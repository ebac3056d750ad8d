// The number of pending permission requests outside the page: the app badge
// (navigator.setAppBadge, for an installed app) and the favicon (the icon
// with a red disc and the count). The service worker sets the badge too, from
// each push; the page keeps it right while it is open.

import { effect, type ReadonlySignal } from "@preact/signals";

/** What the disc says: "" for none, "1".."9", then "9+". */
export function badgeLabel(n: number): string {
  if (!Number.isFinite(n) || n <= 0) return "";
  return n > 9 ? "9+" : String(Math.floor(n));
}

/** The part of CanvasRenderingContext2D the drawing uses (the tests record the calls). */
export type BadgeCanvas = Pick<CanvasRenderingContext2D, "clearRect" | "drawImage" | "beginPath" | "arc" | "fill" | "fillText" | "fillRect"> & {
  fillStyle: CanvasRenderingContext2D["fillStyle"];
  font: string;
  textAlign: CanvasTextAlign;
  textBaseline: CanvasTextBaseline;
};

/**
 * Draws the favicon on a size × size canvas: the icon (or a plain square
 * while it has not loaded) and, for n > 0, a red disc at the top right with
 * the count in white.
 */
export function drawBadge(ctx: BadgeCanvas, size: number, n: number, icon?: CanvasImageSource | null) {
  ctx.clearRect(0, 0, size, size);
  if (icon) ctx.drawImage(icon, 0, 0, size, size);
  else {
    ctx.fillStyle = "#2f6feb";
    ctx.fillRect(0, 0, size, size);
  }
  const label = badgeLabel(n);
  if (!label) return;
  const r = size * 0.34;
  const cx = size - r;
  const cy = r;
  ctx.beginPath();
  ctx.arc(cx, cy, r, 0, 2 * Math.PI);
  ctx.fillStyle = "#d92d20";
  ctx.fill();
  ctx.fillStyle = "#ffffff";
  ctx.font = `bold ${Math.round(r * (label.length > 1 ? 1.05 : 1.4))}px system-ui, sans-serif`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillText(label, cx, cy + size * 0.02);
}

const SIZE = 64;

/** Keeps the app badge and the favicon on the count; returns the stop function. */
export function startBadge(count: ReadonlySignal<number>): () => void {
  const link = document.querySelector<HTMLLinkElement>('link[rel="icon"]');
  const original = link ? { href: link.getAttribute("href") ?? "", type: link.type } : null;
  let icon: HTMLImageElement | null = null;
  let iconReady = false;
  const paint = (n: number) => {
    if (!link || !original) return;
    if (n <= 0) {
      if (link.getAttribute("href") !== original.href) {
        link.setAttribute("href", original.href);
        link.type = original.type;
      }
      return;
    }
    const canvas = document.createElement("canvas");
    canvas.width = canvas.height = SIZE;
    const ctx = canvas.getContext("2d");
    if (!ctx) return;
    if (!icon) {
      icon = new Image();
      icon.onload = () => {
        iconReady = true;
        paint(count.peek());
      };
      icon.src = original.href;
    }
    drawBadge(ctx, SIZE, n, iconReady ? icon : null);
    link.type = "image/png";
    link.href = canvas.toDataURL("image/png");
  };
  return effect(() => {
    const n = count.value;
    paint(n);
    const nav = navigator as Navigator & { setAppBadge?: (n?: number) => Promise<void>; clearAppBadge?: () => Promise<void> };
    if (n > 0) nav.setAppBadge?.(n).catch(() => undefined);
    else nav.clearAppBadge?.().catch(() => undefined);
  });
}
