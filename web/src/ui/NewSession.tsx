// The new-session form: working directory (typed, or picked from /api/files),
// provider (display names; unavailable ones say why), title. Start creates the
// session and opens it.

import { useEffect, useState } from "preact/hooks";
import { get, post, q } from "../lib/api";
import type { Session } from "../protocol/types";
import { loadProviders, navigate, providers, sessions, upsertSession } from "../state/app";

export function NewSession() {
  const provs = providers.value;
  const recentCwd = sessions.value.find((s) => s.cwd)?.cwd ?? "";
  const [cwd, setCwd] = useState(() => localStorage.getItem("svc-last-cwd") ?? recentCwd);
  const [provider, setProvider] = useState("");
  const [title, setTitle] = useState("");
  const [err, setErr] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [browse, setBrowse] = useState(false);

  useEffect(() => {
    if (provs.length === 0) loadProviders();
  }, []);
  useEffect(() => {
    if (!cwd && recentCwd) setCwd(recentCwd);
  }, [recentCwd]);
  useEffect(() => {
    if (!provider && provs.length) setProvider((provs.find((p) => p.default) ?? provs[0]).name);
  }, [provs]);

  const start = async (e: Event) => {
    e.preventDefault();
    setErr(null);
    setBusy(true);
    try {
      const s = await post<Session>("/api/sessions", { cwd: cwd.trim(), ...(provider ? { provider } : {}), ...(title.trim() ? { title: title.trim() } : {}) });
      localStorage.setItem("svc-last-cwd", s.cwd);
      upsertSession(s);
      navigate(`/s/${s.session_id}`);
    } catch (e2) {
      setErr((e2 as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const sel = provs.find((p) => p.name === provider);
  return (
    <div class="newsession">
      <h1>New session</h1>
      <form onSubmit={start} aria-label="New session">
        <label for="ns-cwd">Working directory</label>
        <div class="row">
          <input id="ns-cwd" required value={cwd} onInput={(e) => setCwd(e.currentTarget.value)} placeholder="/home/me/project" autocomplete="off" spellcheck={false} />
          <button type="button" aria-expanded={browse} onClick={() => setBrowse(!browse)}>
            Browse
          </button>
        </div>
        {browse && <DirPicker start={cwd || "/"} onPick={(p) => (setCwd(p), setBrowse(false))} />}
        <label for="ns-provider">Provider</label>
        <select id="ns-provider" value={provider} onChange={(e) => setProvider(e.currentTarget.value)}>
          {provs.map((p) => (
            <option key={p.name} value={p.name}>
              {p.display_name}
            </option>
          ))}
        </select>
        {sel && !sel.available && <p class="warn">{sel.display_name} is not installed here: {sel.reason}</p>}
        <label for="ns-title">Title</label>
        <input id="ns-title" value={title} onInput={(e) => setTitle(e.currentTarget.value)} maxLength={500} placeholder="optional" />
        {err && (
          <p class="error" role="alert">
            {err}
          </p>
        )}
        <button type="submit" class="primary big" disabled={busy}>
          Start
        </button>
      </form>
    </div>
  );
}

function DirPicker({ start, onPick }: { start: string; onPick: (p: string) => void }) {
  const [path, setPath] = useState(start);
  const [dirs, setDirs] = useState<string[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setErr(null);
    get<{ path: string; entries: { name: string; type: string; target?: string }[] }>(`/api/files?path=${q(path)}&hidden=false`)
      .then((r) => live && setDirs(r.entries.filter((e) => e.type === "dir" || e.target === "dir").map((e) => e.name)))
      .catch((e) => live && (setErr(e.message), setDirs([])));
    return () => {
      live = false;
    };
  }, [path]);
  const up = path.replace(/\/[^/]*\/?$/, "") || "/";
  const join = (n: string) => (path.endsWith("/") ? path + n : path + "/" + n);
  return (
    <div class="dirpicker" role="group" aria-label="Pick a directory">
      <div class="row">
        <code class="wrap">{path}</code>
        <button type="button" onClick={() => onPick(path)}>
          Use this directory
        </button>
      </div>
      {err && <p class="error">{err}</p>}
      <ul class="plain dirs">
        {path !== "/" && (
          <li>
            <button type="button" class="linklike" onClick={() => setPath(up)}>
              ..
            </button>
          </li>
        )}
        {dirs?.map((d) => (
          <li key={d}>
            <button type="button" class="linklike" onClick={() => setPath(join(d))}>
              {d}/
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}
