// What a session pane shows before it knows the session's working
// directory: a word when no session is open, the error when the session
// cannot be read, "Loading" meanwhile; then its children with the directory.

import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { ApiError } from "../lib/api";
import { sessionInfo } from "../state/app";

export function SessionCwd({ sessionId, none, errClass, children }: { sessionId: string | null; none: string; errClass: string; children: (cwd: string) => ComponentChildren }) {
  const [cwd, setCwd] = useState<string | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    if (!sessionId) return;
    sessionInfo(sessionId).then(
      (s) => setCwd(s.cwd),
      (e) => setErr((e as ApiError).message),
    );
  }, [sessionId]);
  if (!sessionId) return <p class="muted pad">{none}</p>;
  if (err)
    return (
      <p class={`${errClass} pad`} role="alert">
        {err}
      </p>
    );
  if (!cwd)
    return (
      <p class="muted pad" role="status">
        Loading the session…
      </p>
    );
  return <>{children(cwd)}</>;
}
