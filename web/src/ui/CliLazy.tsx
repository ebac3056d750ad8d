// The terminal sessions' views load on demand (their own chunk): the first
// load of the app stays the conversation's.

import { useEffect, useState } from "preact/hooks";
import type { CliRef } from "../state/app";

type Mod = typeof import("./cli");
let mod: Promise<Mod> | null = null;

function useCli(): { m: Mod | null; err: string | null; retry: () => void } {
  const [m, setM] = useState<Mod | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  useEffect(() => {
    let live = true;
    mod ??= import("./cli");
    mod.then(
      (x) => live && setM(x),
      (e) => {
        mod = null;
        if (live) setErr((e as Error).message);
      },
    );
    return () => {
      live = false;
    };
  }, [attempt]);
  return { m, err, retry: () => (setErr(null), setAttempt(attempt + 1)) };
}

function Failed({ err, retry }: { err: string; retry: () => void }) {
  return (
    <div class="empty">
      <p role="alert">The terminal sessions' view could not be loaded: {err}</p>
      <button type="button" onClick={retry}>
        Try again
      </button>
    </div>
  );
}

/** The list of terminal sessions: compact in the sidebar, a page at /cli. */
export function CliListLazy({ page = false }: { page?: boolean }) {
  const { m, err, retry } = useCli();
  if (err) return <Failed err={err} retry={retry} />;
  if (!m)
    return (
      <p class="muted pad" role="status">
        Loading…
      </p>
    );
  return <m.CliList page={page} />;
}

/** One terminal session, read-only. */
export function CliSessionLazy({ cliRef }: { cliRef: CliRef }) {
  const { m, err, retry } = useCli();
  if (err) return <Failed err={err} retry={retry} />;
  if (!m)
    return (
      <p class="muted pad" role="status">
        Loading…
      </p>
    );
  return <m.CliSessionView key={`${cliRef.provider}/${cliRef.id}`} cliRef={cliRef} />;
}
