// The command palette (dialog "Command palette", Ctrl/⌘+K) and the
// shortcuts sheet (dialog "Keyboard shortcuts", ?). Loaded lazily by App the
// first time either opens, so they stay light: no pane code is imported
// here, only the app's state and the fuzzy filter.

import { Fragment } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { post, q } from "../lib/api";
import { signOut } from "../lib/signout";
import { GLOBAL_PANES, helpOpen, lastSession, navigate, PANE_LABELS, panePath, paletteOpen, route, SESSION_PANES, sessions, theme, type PaneName } from "../state/app";
import { filterEntries, type PaletteEntry } from "./paletteFilter";
import "./palette.css";

interface Entry extends PaletteEntry {
  kind: "pane" | "session" | "action";
  hint?: string;
  run: () => void | Promise<void>;
}

/** The settings sections the palette reaches directly (/settings?section=...). */
const SETTINGS_SECTIONS: [string, string][] = [
  ["providers", "Providers"],
  ["config", "App and project config"],
  ["layout", "Tabs and presets"],
  ["helpers", "Companion helpers"],
  ["security", "Password and revocation"],
  ["tasks", "Background tasks"],
  ["catalog", "Commands, agents, plugins and skills"],
];

function entries(): Entry[] {
  const r = route.value;
  const sess = r.session ?? lastSession.value;
  const list: Entry[] = [];
  for (const p of [...SESSION_PANES, ...GLOBAL_PANES] as PaneName[]) {
    const path = panePath(p, sess);
    list.push({
      id: "pane:" + p,
      kind: "pane",
      label: PANE_LABELS[p],
      hint: path ? "pane" : "pane · open a session first",
      keywords: "pane go to " + p,
      run: () => navigate(path ?? "/new"),
    });
  }
  for (const s of sessions.value) {
    const title = s.title || s.session_id;
    list.push({
      id: "session:" + s.session_id,
      kind: "session",
      label: title,
      hint: "session",
      keywords: "session " + (s.cwd ?? ""),
      // In a session pane, the same pane of the other session.
      run: () => navigate(r.view === "session" ? (panePath(r.pane, s.session_id) ?? `/s/${s.session_id}`) : `/s/${s.session_id}`),
    });
  }
  list.push({ id: "new", kind: "action", label: "New session", keywords: "start create", run: () => navigate("/new") });
  if (r.view === "session" && r.session) {
    const id = r.session;
    list.push({
      id: "stop",
      kind: "action",
      label: "Stop the agent",
      hint: "of the open session",
      keywords: "interrupt cancel halt",
      run: async () => {
        await post(`/api/session/${q(id)}/stop`);
      },
    });
  }
  for (const [t, name] of [["light", "light"], ["dark", "dark"], ["system", "as the system"]] as const)
    list.push({ id: "theme:" + t, kind: "action", label: `Theme: ${name}`, hint: theme.value === t ? "current" : undefined, keywords: "theme colours appearance", run: () => void (theme.value = t) });
  list.push({ id: "help", kind: "action", label: "Show keyboard shortcuts", keywords: "help keys ?", run: () => void (helpOpen.value = true) });
  for (const [sec, name] of SETTINGS_SECTIONS)
    list.push({ id: "settings:" + sec, kind: "action", label: `Settings: ${name}`, keywords: "settings " + sec, run: () => navigate(`/settings?section=${sec}`) });
  list.push({
    id: "signout",
    kind: "action",
    label: "Sign out",
    keywords: "logout log out",
    run: () => void signOut(),
  });
  return list;
}

/** Keeps focus inside while open and gives it back to what had it when closed. */
function useReturnFocus() {
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    return () => {
      if (before && before.isConnected) before.focus();
    };
  }, []);
}

export function Palette() {
  const [query, setQuery] = useState("");
  const [sel, setSel] = useState(0);
  const [err, setErr] = useState<string | null>(null);
  const input = useRef<HTMLInputElement>(null);
  const listRef = useRef<HTMLUListElement>(null);
  useReturnFocus();
  const all = entries();
  const shown = filterEntries(all, query);
  const cur = Math.min(sel, Math.max(shown.length - 1, 0));
  useEffect(() => input.current?.focus(), []);
  useEffect(() => {
    listRef.current?.querySelector(`[data-i="${cur}"]`)?.scrollIntoView({ block: "nearest" });
  }, [cur]);

  const close = () => (paletteOpen.value = false);
  const run = async (e: Entry | undefined) => {
    if (!e) return;
    close();
    try {
      await e.run();
    } catch (x) {
      paletteOpen.value = true;
      setErr(`${e.label}: ${(x as Error).message}`);
    }
  };
  const onKey = (e: KeyboardEvent) => {
    const n = shown.length;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (n) setSel((cur + (e.key === "ArrowDown" ? 1 : n - 1)) % n);
    } else if (e.key === "Home" && e.ctrlKey) {
      setSel(0);
    } else if (e.key === "End" && e.ctrlKey) {
      setSel(Math.max(n - 1, 0));
    } else if (e.key === "PageDown" || e.key === "PageUp") {
      e.preventDefault();
      setSel(Math.max(0, Math.min(n - 1, cur + (e.key === "PageDown" ? 8 : -8))));
    } else if (e.key === "Enter") {
      e.preventDefault();
      run(shown[cur]);
    } else if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      close();
    } else if (e.key === "Tab") {
      e.preventDefault(); // the search box is the dialog's one stop
    }
  };
  const optId = (i: number) => `palette-opt-${i}`;
  return (
    <div class="overlay" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div role="dialog" aria-modal="true" aria-label="Command palette" class="palette">
        <input
          ref={input}
          class="palette-search"
          type="text"
          role="combobox"
          aria-label="Search commands"
          aria-expanded="true"
          aria-controls="palette-list"
          aria-autocomplete="list"
          aria-activedescendant={shown.length ? optId(cur) : undefined}
          placeholder="Go to a pane, a session, or run an action…"
          autocomplete="off"
          spellcheck={false}
          value={query}
          onInput={(e) => {
            setQuery(e.currentTarget.value);
            setSel(0);
            setErr(null);
          }}
          onKeyDown={onKey}
        />
        {err && (
          <p class="notice error" role="alert">
            {err}
          </p>
        )}
        <ul id="palette-list" role="listbox" aria-label="Commands" class="palette-list" ref={listRef}>
          {shown.map((e, i) => (
            <li
              key={e.id}
              id={optId(i)}
              data-i={i}
              role="option"
              aria-selected={i === cur}
              class={`palette-opt ${i === cur ? "sel" : ""}`}
              onMouseMove={() => i !== cur && setSel(i)}
              onClick={() => run(e)}
            >
              <span class="palette-label">{e.label}</span>
              <span class="palette-kind" aria-hidden="true">
                {e.hint ?? e.kind}
              </span>
            </li>
          ))}
          {shown.length === 0 && (
            <li class="palette-empty muted" role="presentation">
              Nothing matches “{query}”.
            </li>
          )}
        </ul>
        <p class="palette-foot muted" aria-hidden="true">
          ↑↓ to choose · Enter to run · Esc to close · ? for every shortcut
        </p>
      </div>
    </div>
  );
}

const SHORTCUTS: [string, string][] = [
  ["Ctrl+K, ⌘K", "Open or close the command palette: every pane, session and action"],
  ["Ctrl+Shift+K, ⌘K", "The same from the terminal, where Ctrl+K goes to the shell (kill to the end of the line, nano's cut)"],
  ["?", "Show these shortcuts (outside a text field)"],
  ["Esc", "Close the palette, this sheet, the sessions menu or the inbox"],
  ["↑ ↓, Enter", "In the palette: choose, then run"],
  ["Enter", "Send the message (Shift+Enter for a new line; the composer's setting can swap them)"],
  ["↑ ↓, Tab", "In the composer: choose a command completion"],
  ["Ctrl+Enter, ⌘Enter", "SQL console: run the query"],
];

export function HelpSheet() {
  const btn = useRef<HTMLButtonElement>(null);
  useReturnFocus();
  useEffect(() => btn.current?.focus(), []);
  const close = () => (helpOpen.value = false);
  return (
    <div class="overlay" onMouseDown={(e) => e.target === e.currentTarget && close()}>
      <div
        role="dialog"
        aria-modal="true"
        aria-label="Keyboard shortcuts"
        class="palette helpsheet"
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.stopPropagation();
            close();
          } else if (e.key === "Tab") e.preventDefault();
        }}
      >
        <div class="palette-head">
          <h2>Keyboard shortcuts</h2>
          <button type="button" class="mini" ref={btn} onClick={close}>
            Close
          </button>
        </div>
        <table class="shortcuts">
          <tbody>
            {SHORTCUTS.map(([k, what]) => (
              <tr key={k}>
                <th scope="row">
                  {k.split(", ").map((x, i) => (
                    <Fragment key={x}>
                      {i > 0 && " or "}
                      <kbd>{x}</kbd>
                    </Fragment>
                  ))}
                </th>
                <td>{what}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}
