// Tabs and presets (docs/api.md "Tabs and presets"): the tabs saved for a
// browser profile, which can be closed, and the layout presets, one of which
// is the default (the app config's layout.default_preset).

import { useState } from "preact/hooks";
import { post, put, q } from "../../lib/api";
import { errText, FieldError, useGet } from "./common";

interface Tab {
  id: string;
  kind: string;
  title?: string;
  session_id?: string;
  path?: string;
  url?: string;
  cwd?: string;
  pinned?: boolean;
}
interface Tabs {
  profile: string;
  tabs: Tab[];
  active: string | null;
  updated_at: string | null;
}
interface Preset {
  id: string;
  name: string;
  description: string;
  split: "columns" | "rows";
  panes: { kind: string; size: number }[];
}

export function Layout() {
  const [profile, setProfile] = useState("default");
  const [picked, setPicked] = useState("default");
  const tabs = useGet<Tabs>(`/api/app/tabs?profile=${q(profile)}`);
  const presets = useGet<{ default: string; presets: Preset[] }>("/api/app/presets");
  const [err, setErr] = useState<string | null>(null);
  const save = async (next: Tab[], active: string | null) => {
    try {
      tabs.setData(await post<Tabs>(`/api/app/tabs?profile=${q(profile)}`, { tabs: next, active: next.some((t) => t.id === active) ? active : null }));
      setErr(null);
    } catch (e) {
      setErr(errText(e));
    }
  };
  return (
    <>
      <section class="set-card" aria-label="Tabs">
        <h3>Tabs</h3>
        <form
          class="set-row"
          onSubmit={(e) => {
            e.preventDefault();
            setProfile(picked.trim() || "default");
          }}
        >
          <label for="tabs-profile">Profile</label>
          <input id="tabs-profile" type="text" value={picked} onInput={(e) => setPicked(e.currentTarget.value)} spellcheck={false} />
          <button type="submit">Show</button>
        </form>
        {tabs.error && <p class="notice error">{tabs.error}</p>}
        <FieldError id="tabs-err" msg={err} />
        {tabs.data &&
          (tabs.data.tabs.length === 0 ? (
            <p class="muted">No tabs saved for “{tabs.data.profile}”.</p>
          ) : (
            <ul class="set-list">
              {tabs.data.tabs.map((t) => (
                <li key={t.id} class="set-row">
                  <span class="set-badge">{t.kind}</span>
                  <span class="set-grow">
                    {t.title || t.path || t.url || t.session_id || t.id}
                    {t.id === tabs.data!.active && <strong> (active)</strong>}
                    {t.pinned && " 📌"}
                  </span>
                  <button
                    type="button"
                    class="mini"
                    aria-label={`Close tab ${t.title || t.id}`}
                    onClick={() =>
                      save(
                        tabs.data!.tabs.filter((x) => x.id !== t.id),
                        tabs.data!.active,
                      )
                    }
                  >
                    Close
                  </button>
                </li>
              ))}
            </ul>
          ))}
        {tabs.data && tabs.data.tabs.length > 0 && (
          <button type="button" onClick={() => save([], null)}>
            Close every tab of “{tabs.data.profile}”
          </button>
        )}
      </section>
      <section class="set-card" aria-label="Presets">
        <h3>Layout presets</h3>
        {presets.error && <p class="notice error">{presets.error}</p>}
        <ul class="set-presets">
          {presets.data?.presets.map((p) => (
            <li key={p.id} class={p.id === presets.data!.default ? "cur" : ""}>
              <div class={`set-preset-shape ${p.split}`} aria-hidden="true">
                {p.panes.map((x, i) => (
                  <span key={i} style={{ flexGrow: x.size }}>
                    {x.kind}
                  </span>
                ))}
              </div>
              <strong>{p.name}</strong>
              <span class="muted set-desc">{p.description}</span>
              {p.id === presets.data!.default ? (
                <span class="set-badge ok">default</span>
              ) : (
                <button
                  type="button"
                  class="mini"
                  aria-label={`Make ${p.name} the default preset`}
                  onClick={async () => {
                    try {
                      await put("/api/app/config", { "layout.default_preset": p.id });
                      presets.reload();
                    } catch (e) {
                      setErr(errText(e));
                    }
                  }}
                >
                  Make default
                </button>
              )}
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}
