// The companion helpers (docs/api.md "Companion helpers"): each file's
// install state, and an install that then says what it changed.

import { useState } from "preact/hooks";
import { post } from "../../lib/api";
import { errText, useGet } from "./common";

interface HelperFile {
  name: string;
  target: string;
  installed: boolean;
  up_to_date: boolean;
  hash: string;
  installed_hash: string | null;
  skipped?: string;
}
interface Status {
  files: HelperFile[];
  all_current: boolean;
}

function state(f: HelperFile): string {
  if (f.skipped) return "cannot be installed here";
  if (!f.installed) return "not installed";
  return f.up_to_date ? "up to date" : "out of date (or edited here)";
}

/** What an install changed, file by file, from the status before and after. */
export function changes(before: HelperFile[], after: HelperFile[]): string[] {
  return after.map((a) => {
    const b = before.find((x) => x.name === a.name);
    if (a.skipped) return `${a.name}: skipped (${a.skipped})`;
    if (!b || !b.installed) return `${a.name}: installed at ${a.target}`;
    if (b.installed_hash !== a.installed_hash) return `${a.name}: replaced (${b.up_to_date ? "updated" : "a local edit or an older version was overwritten"})`;
    return `${a.name}: unchanged`;
  });
}

export function Helpers() {
  const { data, setData, error } = useGet<Status>("/api/app/helpers/status");
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  if (error) return <p class="notice error">The helpers' state could not be read: {error}</p>;
  if (!data) return <p class="muted">Loading…</p>;
  return (
    <section class="set-card" aria-label="Companion helpers">
      <h3>Companion helpers</h3>
      <p class="muted">shadow-git and shadow-query for your shell and agents, and an agent template. {data.all_current ? "All are current." : "Some are missing or out of date."}</p>
      <table class="set-table">
        <thead>
          <tr>
            <th scope="col">Helper</th>
            <th scope="col">State</th>
            <th scope="col">Installed to</th>
          </tr>
        </thead>
        <tbody>
          {data.files.map((f) => (
            <tr key={f.name}>
              <td>
                <code>{f.name}</code>
              </td>
              <td class={f.installed && f.up_to_date ? "ok" : "warnc"}>{state(f)}</td>
              <td>
                <code class="set-path">{f.target}</code>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <div class="set-row">
        <button
          type="button"
          class="primary"
          disabled={busy}
          onClick={async () => {
            setBusy(true);
            try {
              const after = await post<Status>("/api/app/helpers/install", {});
              setDone(changes(data.files, after.files));
              setData(after);
              setErr(null);
            } catch (e) {
              setErr(errText(e));
            } finally {
              setBusy(false);
            }
          }}
        >
          {data.all_current ? "Reinstall helpers" : "Install helpers"}
        </button>
        <span class="muted">Replaces local edits of the installed copies.</span>
      </div>
      {err && <p class="notice error">{err}</p>}
      {done && (
        <div role="status" class="set-done">
          <strong>Installed.</strong>
          <ul class="set-list">
            {done.map((l) => (
              <li key={l}>{l}</li>
            ))}
          </ul>
        </div>
      )}
    </section>
  );
}
