// The result grid's window: which rows are in the DOM for a scroll position.
//
// The grid is a scroller holding a spacer as tall as every row would be; only
// the rows in view (plus a few either side) are rendered, placed at their
// offsets. Browsers cap an element's height (Chromium near 33.5 million px,
// Firefox near 17.9 million), so past MAX_SPACER_PX the spacer stays at that
// height and a scroll position maps to a row in proportion: every row is still
// reachable, a pixel of scrolling then moving more than a pixel of rows.

export const MAX_SPACER_PX = 15_000_000;

export interface WindowIn {
  /** The scroller's scrollTop (px), measured below the header. */
  scrollTop: number;
  /** The height of the visible area for rows (px). */
  viewport: number;
  /** One row's height (px). */
  rowHeight: number;
  /** The number of rows. */
  total: number;
  /** Rows rendered beyond the visible ones, on each side. */
  overscan?: number;
}

export interface WindowOut {
  /** First rendered row (index into the rows). */
  start: number;
  /** One past the last rendered row. */
  end: number;
  /** Where row `start` is drawn, from the top of the spacer (px). */
  offset: number;
  /** The spacer's height (px). */
  height: number;
}

/** The spacer's height for total rows. */
export function spacerHeight(total: number, rowHeight: number): number {
  return Math.min(total * rowHeight, MAX_SPACER_PX);
}

export function gridWindow({ scrollTop, viewport, rowHeight, total, overscan = 6 }: WindowIn): WindowOut {
  const height = spacerHeight(total, rowHeight);
  if (total <= 0 || rowHeight <= 0) return { start: 0, end: 0, offset: 0, height: 0 };
  const visible = Math.max(1, Math.ceil(Math.max(0, viewport) / rowHeight) + 1);
  const maxScroll = Math.max(0, height - viewport);
  const top = Math.min(Math.max(0, scrollTop), maxScroll);
  let first: number;
  let firstOffset: number;
  if (height === total * rowHeight) {
    first = Math.floor(top / rowHeight);
    firstOffset = first * rowHeight;
  } else {
    // Scaled: the scroll fraction picks the first visible row, drawn at the top of the view.
    const rowsScrollable = Math.max(0, total - Math.floor(viewport / rowHeight));
    const frac = maxScroll > 0 ? top / maxScroll : 0;
    first = Math.min(total - 1, Math.floor(frac * rowsScrollable));
    firstOffset = top;
  }
  first = Math.min(first, total - 1);
  const start = Math.max(0, first - overscan);
  const end = Math.min(total, first + visible + overscan);
  return { start, end, offset: firstOffset - (first - start) * rowHeight, height };
}
