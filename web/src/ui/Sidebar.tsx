// The sidebar: "New session", search, and the sessions grouped by project,
// each with its live state (working, waiting for permission, idle); the
// archived ones only after "Show archived".

import { useState } from "preact/hooks";
import { del, get, patch, post, put, q } from "../lib/api";
import { baseName, fmtAgo } from "../lib/format";
import type { Session, SessionSummary } from "../protocol/types";
import {
  applySession,
  archivedError,
  archivedSessions,
  eventsLive,
  favourites,
  loadArchived,
  navigate,
  pendingAll,
  removeSession,
  route,
  sessions,
  sessionsError,
  setArchived,
  showArchived,
  sidebarTab,
} from "../state/app";
import { CliListLazy } from "./CliLazy";
import { groupByProject, sidebarSessions } from "../state/sidebar";

interface Hit {
  kind: string;
  session_id: string;
  title: string;
  cwd: string;
  snippet: string;
  line: number | null;
  archived: boolean;
}

export function Sidebar() {
  const showArch = showArchived.value;
  const list = sidebarSessions(sessions.value, archivedSessions.value, showArch);
  const pend = pendingAll.value;
  const favs = favourites.value;
  const cur = route.value.session;
  const [query, setQuery] = useState("");
  const [hits, setHits] = useState<Hit[] | null>(null);
  const [err, setErr] = useState<string | null>(null);

  const search = async (e: Event) => {
    e.preventDefault();
    if (!query.trim()) {
      setHits(null);
      return;
    }
    try {
      const r = await post<{ results: Hit[] }>("/api/welcome/search", { query: query.trim(), limit: 30 });
      setHits(r.results);
      setErr(null);
    } catch (e2) {
      setErr((e2 as Error).message);
    }
  };

  const pendingOf = (id: string) => pend.filter((p) => p.session_id === id).length;
  const groups = groupByProject(list, favs);
  const toggleArchived = () => {
    const next = !showArchived.peek();
    showArchived.value = next;
    if (next) loadArchived();
  };

  return (
    <nav class="sidebar" aria-label="Sessions">
      <div class="sidetop">
        <a
          class="button primary big newbtn"
          href="/new"
          role="button"
          onClick={(e) => {
            e.preventDefault();
            navigate("/new");
          }}
        >
          New session
        </a>
        <SideTabs />
        {sidebarTab.value === "svc" && (
          <form role="search" onSubmit={search} class="search">
            <label class="sr-only" for="session-search">
              Search sessions
            </label>
            <input id="session-search" type="search" placeholder="Search titles and prompts" value={query} onInput={(e) => (setQuery(e.currentTarget.value), e.currentTarget.value === "" && setHits(null))} />
          </form>
        )}
      </div>
      {sidebarTab.value === "cli" ? (
        <div role="tabpanel" id="sidepanel-cli" aria-labelledby="sidetab-cli" class="sidepanel">
          <CliListLazy />
        </div>
      ) : (
        <div role="tabpanel" id="sidepanel-svc" aria-labelledby="sidetab-svc" class="sidepanel">
      {err && <p class="error">{err}</p>}
      {sessionsError.value && !eventsLive.value && <p class="error">Sessions: {sessionsError.value}</p>}
      {hits ? (
        <div class="hits">
          <p class="muted">
            {hits.length} result{hits.length === 1 ? "" : "s"} ·{" "}
            <button type="button" class="linklike" onClick={() => (setHits(null), setQuery(""))}>
              clear
            </button>
          </p>
          <ul class="plain">
            {hits.map((h, i) => (
              <li key={i}>
                <a href={`/s/${h.session_id}`} onClick={(e) => (e.preventDefault(), navigate(`/s/${h.session_id}`))}>
                  {h.title || "Untitled session"}
                  {h.archived ? " (archived)" : ""}
                </a>
                <div class="snippet">{renderSnippet(h.snippet)}</div>
              </li>
            ))}
          </ul>
        </div>
      ) : (
        <div class="groups">
          {list.length === 0 && <p class="muted pad">{showArch ? "No sessions." : "No sessions yet."}</p>}
          {[...groups].map(([cwd, items]) => (
            <section key={cwd} class="group">
              <h2 title={cwd}>{baseName(cwd) || "(no directory)"}</h2>
              <ul class="plain">
                {items.map((s) => (
                  <SessionItem key={s.session_id} s={s} current={s.session_id === cur} pending={Math.max(pendingOf(s.session_id), eventsLive.value ? 0 : s.pending_permissions ?? 0)} fav={favs.has(s.session_id) || !!s.is_favorite} />
                ))}
              </ul>
            </section>
          ))}
          <div class="sidefoot">
            <button type="button" class="mini" aria-pressed={showArch} onClick={toggleArchived}>
              <span aria-hidden="true">{showArch ? "✓ " : ""}</span>Show archived
            </button>
            {showArch && archivedError.value && <p class="error">Archived sessions: {archivedError.value}</p>}
            {showArch && !archivedError.value && !list.some((x) => x.archived) && <p class="muted">No archived sessions.</p>}
          </div>
        </div>
      )}
        </div>
      )}
    </nav>
  );
}

/** svc-code's sessions, or those run in a terminal (Claude Code, Codex). */
function SideTabs() {
  const tab = sidebarTab.value;
  const tabs: { key: "svc" | "cli"; label: string }[] = [
    { key: "svc", label: "svc-code" },
    { key: "cli", label: "Terminal" },
  ];
  const onKey = (e: KeyboardEvent) => {
    if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
    e.preventDefault();
    const next = tab === "svc" ? "cli" : "svc";
    sidebarTab.value = next;
    requestAnimationFrame(() => document.getElementById(`sidetab-${next}`)?.focus());
  };
  return (
    <div class="sidetabs" role="tablist" aria-label="Which sessions" onKeyDown={onKey}>
      {tabs.map((t) => (
        <button
          key={t.key}
          type="button"
          role="tab"
          id={`sidetab-${t.key}`}
          aria-selected={tab === t.key}
          aria-controls={`sidepanel-${t.key}`}
          tabIndex={tab === t.key ? 0 : -1}
          title={t.key === "cli" ? "Claude Code and Codex sessions run in a terminal" : "Sessions run by svc-code"}
          onClick={() => (sidebarTab.value = t.key)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

function renderSnippet(s: string) {
  // The server marks matches with **…**; the text is not HTML: render as text.
  return s.split("**").map((part, i) => (i % 2 ? <mark key={i}>{part}</mark> : part));
}

function SessionItem({ s, current, pending, fav }: { s: SessionSummary; current: boolean; pending: number; fav: boolean }) {
  const [menu, setMenu] = useState(false);
  const state = pending > 0 ? "waiting" : s.agent_running ? "running" : "idle";
  const stateText = pending > 0 ? `needs permission (${pending})` : s.agent_running ? "running" : "idle";
  const toggleFav = async () => {
    try {
      if (fav) await del(`/api/favorites/sessions/${q(s.session_id)}`);
      else await put(`/api/favorites/sessions/${q(s.session_id)}`, {});
      const next = new Set(favourites.peek());
      if (fav) next.delete(s.session_id);
      else next.add(s.session_id);
      favourites.value = next;
      sessions.value = sessions.peek().map((x) => (x.session_id === s.session_id ? { ...x, is_favorite: !fav } : x));
    } catch (e) {
      alert((e as Error).message);
    }
  };
  const rename = async () => {
    const t = prompt("Rename the session", s.title);
    if (t === null) return;
    try {
      applySession(await patch<Session>(`/api/session/${q(s.session_id)}`, { title: t }));
    } catch (e) {
      alert((e as Error).message);
    }
  };
  const toggleArchived = async () => {
    try {
      await setArchived(s.session_id, !s.archived);
    } catch (e) {
      alert((e as Error).message);
    }
  };
  const remove = async () => {
    if (!confirm(`Delete "${s.title || "Untitled session"}" and its whole log?`)) return;
    try {
      await del(`/api/session/${q(s.session_id)}`);
      removeSession(s.session_id);
      if (current) navigate("/");
    } catch (e) {
      alert((e as Error).message);
    }
  };
  return (
    <li class={`sess ${current ? "current" : ""} ${s.archived ? "archived" : ""}`}>
      <a href={`/s/${s.session_id}`} aria-current={current ? "page" : undefined} onClick={(e) => (e.preventDefault(), navigate(`/s/${s.session_id}`))}>
        <span class="stitle">
          {s.title || "Untitled session"}
          {fav && <span aria-label=", favourite"> ★</span>}
          {s.parent_id && <span class="tag forktag">fork</span>}
          {s.archived && <span class="tag forktag">archived</span>}
        </span>
        <span class={`sstate ${state}`}>
          <span class="dot" aria-hidden="true" />
          {stateText}
          {s.updated_at && <span class="muted">&nbsp;· {fmtAgo(s.updated_at)}</span>}
        </span>
      </a>
      <button type="button" class="mini more" aria-label={`Actions for ${s.title || "Untitled session"}`} aria-expanded={menu} onClick={() => setMenu(!menu)}>
        ⋯
      </button>
      {menu && (
        <div class="menu" role="menu" onClick={() => setMenu(false)}>
          <button type="button" role="menuitem" onClick={rename}>
            Rename
          </button>
          <button type="button" role="menuitem" onClick={toggleFav}>
            {fav ? "Remove from favourites" : "Favourite"}
          </button>
          <button type="button" role="menuitem" onClick={toggleArchived}>
            {s.archived ? "Unarchive" : "Archive"}
          </button>
          <button type="button" role="menuitem" class="danger" onClick={remove}>
            Delete
          </button>
        </div>
      )}
    </li>
  );
}

export async function refreshOne(id: string) {
  try {
    const s = await get(`/api/session/${q(id)}`);
    sessions.value = sessions.peek().map((x) => (x.session_id === id ? { ...x, ...s } : x));
  } catch {
    /* ignore */
  }
}
