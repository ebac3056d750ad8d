import type { Signal } from "@preact/signals";
import { useLayoutEffect, useMemo, useRef } from "preact/hooks";
import { highlightWithin } from "../lib/highlight";
import { renderBlock, splitBlocks } from "../lib/markdown";

/** Finished markdown: parsed once (memoised by its text), highlighted when idle. */
export function Markdown({ text }: { text: string }) {
  const html = useMemo(() => splitBlocks(text).map(renderBlock).join(""), [text]);
  const ref = useRef<HTMLDivElement>(null);
  useLayoutEffect(() => {
    if (ref.current) highlightWithin(ref.current);
  }, [html]);
  return <div class="md" ref={ref} dangerouslySetInnerHTML={{ __html: html }} />;
}

/**
 * Markdown that may still grow (a streamed message): the finished blocks are
 * memoised; a new delta re-parses only the last block. Reading text.value in
 * this component subscribes it alone to the stream.
 */
export function LiveMarkdown({ text, open }: { text: Signal<string>; open: Signal<boolean> }) {
  if (!open.value) return <Markdown text={text.value} />;
  const blocks = splitBlocks(text.value);
  return (
    <div class="md streaming">
      {blocks.map((b, i) => (
        <div key={i} dangerouslySetInnerHTML={{ __html: renderBlock(b) }} />
      ))}
    </div>
  );
}
