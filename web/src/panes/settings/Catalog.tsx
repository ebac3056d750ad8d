// The catalog (docs/api.md "Catalog"): the commands, agents and skills the
// agents can be asked to use, and the plugins that bring some, for the
// user alone or with a project's own.

import { useState } from "preact/hooks";
import { q } from "../../lib/api";
import { sessions } from "../../state/app";
import { knownProjects, useGet } from "./common";

interface Entry {
  name: string;
  kind: string;
  invocation: string;
  provider: string;
  scope: string;
  path: string;
  description: string;
  active: boolean;
  shadowed_by?: string;
  plugin?: string;
  error?: string;
}
interface Plugin {
  id: string;
  name: string;
  version?: string;
  description?: string;
  enabled: boolean;
  applies: boolean;
  commands: number;
  agents: number;
  skills: number;
  error?: string;
}

export function Catalog() {
  const projects = knownProjects(sessions.value);
  const [cwd, setCwd] = useState("");
  const suffix = cwd ? `?cwd=${q(cwd)}` : "";
  return (
    <>
      <div class="set-card set-row">
        <label for="cat-cwd">Project</label>
        <select id="cat-cwd" value={cwd} onChange={(e) => setCwd(e.currentTarget.value)}>
          <option value="">none (personal entries only)</option>
          {projects.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </div>
      <EntryTable title="Commands" path={`/api/commands${suffix}`} field="commands" />
      <EntryTable title="Agents" path={`/api/agents${suffix}`} field="agents" />
      <EntryTable title="Skills" path={`/api/skills${suffix}`} field="skills" />
      <Plugins path={`/api/plugins${suffix}`} />
    </>
  );
}

function EntryTable({ title, path, field }: { title: string; path: string; field: string }) {
  const { data, error } = useGet<Record<string, Entry[]>>(path);
  const list = data?.[field] ?? [];
  return (
    <section class="set-card" aria-label={title}>
      <h3>
        {title} {data && <span class="muted">({list.length})</span>}
      </h3>
      {error && <p class="notice error">{error}</p>}
      {data && list.length === 0 && <p class="muted">None.</p>}
      {list.length > 0 && (
        <table class="set-table">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Scope</th>
              <th scope="col">Description</th>
            </tr>
          </thead>
          <tbody>
            {list.map((e) => (
              <tr key={e.path + e.name} class={e.active ? "" : "set-inactive"}>
                <td>
                  <code>{e.invocation || e.name}</code>
                  {e.provider === "codex" && <span class="set-badge">codex</span>}
                </td>
                <td>
                  {e.scope}
                  {e.plugin && <span class="muted"> ({e.plugin})</span>}
                  {e.shadowed_by && <span class="muted"> · hidden by {e.shadowed_by}</span>}
                </td>
                <td>
                  {e.error ? <span class="warnc">{e.error}</span> : e.description}
                  <div class="muted set-path" title={e.path}>
                    {e.path}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Plugins({ path }: { path: string }) {
  const { data, error } = useGet<{ plugins: Plugin[]; error?: string }>(path);
  return (
    <section class="set-card" aria-label="Plugins">
      <h3>Plugins</h3>
      {(error || data?.error) && <p class="notice error">{error ?? data?.error}</p>}
      {data && data.plugins.length === 0 && <p class="muted">No plugin installed.</p>}
      <ul class="set-list">
        {data?.plugins.map((p) => (
          <li key={p.id}>
            <strong>{p.name}</strong> {p.version && <span class="muted">{p.version}</span>} <span class={`set-badge ${p.enabled && p.applies ? "ok" : ""}`}>{p.enabled ? (p.applies ? "enabled" : "other project") : "disabled"}</span>
            <div class="muted">
              {p.description} {p.commands} commands, {p.agents} agents, {p.skills} skills. {p.error}
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}
