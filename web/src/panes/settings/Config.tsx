// The server's app config (docs/api.md "App config") and one project's
// config with its rename ("Project config"). Only what was edited is sent;
// a refused key shows the server's message at its field, and nothing is
// stored then (the server checks every key before storing any).

import { Fragment } from "preact";
import { useEffect, useState } from "preact/hooks";
import { post, put, q } from "../../lib/api";
import { sessions } from "../../state/app";
import { errText, fieldOf, FieldError, invalid, knownProjects, useGet } from "./common";

interface KeyInfo {
  key: string;
  type: string;
  default: unknown;
  description: string;
  set: boolean;
}
interface AppConfig {
  config: Record<string, unknown>;
  keys: KeyInfo[];
}

const CHOICES: Record<string, string[]> = { "ui.theme": ["system", "light", "dark"] };

function shown(v: unknown): string {
  if (Array.isArray(v)) return v.join("\n");
  return v === null || v === undefined ? "" : String(v);
}
function parsed(info: KeyInfo, text: string): unknown {
  if (Array.isArray(info.default)) return text.split("\n").map((s) => s.trim()).filter(Boolean);
  if (typeof info.default === "number") return text.trim() === "" ? null : Number(text);
  return text;
}

export function AppConfigForm() {
  const { data, setData, error } = useGet<AppConfig>("/api/app/config");
  const presets = useGet<{ presets: { id: string; name: string }[] }>("/api/app/presets");
  const [edits, setEdits] = useState<Record<string, string>>({});
  const [err, setErr] = useState<{ field: string; msg: string } | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  if (error) return <p class="notice error">The app config could not be read: {error}</p>;
  if (!data) return <p class="muted">Loading…</p>;
  const keys = data.keys.map((k) => k.key);
  const send = async (body: Record<string, unknown>, what: string) => {
    try {
      const r = await put<AppConfig>("/api/app/config", body);
      setData(r);
      setEdits({});
      setErr(null);
      setSaved(what);
    } catch (e) {
      const msg = errText(e);
      setSaved(null);
      setErr({ field: fieldOf(msg, keys), msg });
    }
  };
  const changed = Object.keys(edits);
  return (
    <form
      class="set-card set-form"
      aria-label="App config"
      onSubmit={(e) => {
        e.preventDefault();
        const body: Record<string, unknown> = {};
        for (const k of changed) body[k] = parsed(data.keys.find((x) => x.key === k)!, edits[k]);
        send(body, `Saved ${changed.join(", ")}`);
      }}
    >
      <h3>App config</h3>
      <p class="muted">Shared by every instance and service; applies at once.</p>
      <div class="set-grid">
        {data.keys.map((k) => {
          const id = "cfg-" + k.key.replace(/\W/g, "-");
          const v = edits[k.key] ?? shown(data.config[k.key]);
          const msg = err?.field === k.key ? err.msg : null;
          const onInput = (e: Event) => {
            setSaved(null);
            setEdits({ ...edits, [k.key]: (e.currentTarget as HTMLInputElement).value });
          };
          const choices = k.key === "layout.default_preset" ? presets.data?.presets.map((p) => p.id) : CHOICES[k.key];
          return (
            <Fragment key={k.key}>
              <label for={id}>
                <code>{k.key}</code>
                {k.set && <span class="set-badge">set</span>}
              </label>
              <div>
                {choices ? (
                  <select id={id} value={v} onChange={onInput} {...invalid(id + "-err", msg)}>
                    {(choices.includes(v) ? choices : [v, ...choices]).map((c) => (
                      <option key={c}>{c}</option>
                    ))}
                  </select>
                ) : Array.isArray(k.default) ? (
                  <textarea id={id} rows={3} value={v} onInput={onInput} placeholder="one per line" spellcheck={false} {...invalid(id + "-err", msg)} />
                ) : (
                  <input id={id} type={typeof k.default === "number" ? "number" : "text"} value={v} onInput={onInput} {...invalid(id + "-err", msg)} />
                )}
                <FieldError id={id + "-err"} msg={msg} />
                <p class="muted set-desc">
                  {k.description} Default: <code>{JSON.stringify(k.default)}</code>.{" "}
                  {k.set && (
                    <button type="button" class="linklike" onClick={() => send({ [k.key]: null }, `${k.key} is back to its default`)}>
                      Reset {k.key}
                    </button>
                  )}
                </p>
              </div>
            </Fragment>
          );
        })}
      </div>
      <FieldError id="cfg-form-err" msg={err && !err.field ? err.msg : null} />
      <div class="set-row">
        <button type="submit" class="primary" disabled={changed.length === 0}>
          Save config
        </button>
        {changed.length > 0 && (
          <button type="button" onClick={() => (setEdits({}), setErr(null))}>
            Undo edits
          </button>
        )}
        {saved && (
          <span class="ok" role="status">
            {saved}
          </span>
        )}
      </div>
    </form>
  );
}

interface ProjectConfig {
  path: string;
  hash: string;
  name: string;
  ignore: string[];
  max_file_size_mb: number | null;
  effective_max_file_size_mb: number;
  default_ignore: string[];
  journal: boolean;
}

export function ProjectConfigForm() {
  const projects = knownProjects(sessions.value);
  const [cwd, setCwd] = useState(projects[0] ?? "");
  const [picked, setPicked] = useState(cwd);
  useEffect(() => {
    if (!cwd && projects[0]) setCwd((setPicked(projects[0]), projects[0]));
  }, [projects.length]);
  const { data, setData, error } = useGet<ProjectConfig>(cwd ? `/api/project/config?cwd=${q(cwd)}` : null);
  return (
    <section class="set-card" aria-label="Project config">
      <h3>Project config</h3>
      <form
        class="set-row"
        onSubmit={(e) => {
          e.preventDefault();
          setCwd(picked.trim());
        }}
      >
        <label for="proj-cwd" class="sr-only">
          Project directory
        </label>
        <input id="proj-cwd" list="proj-known" type="text" value={picked} placeholder="/path/to/project" onInput={(e) => setPicked(e.currentTarget.value)} spellcheck={false} />
        <datalist id="proj-known">
          {projects.map((p) => (
            <option key={p} value={p} />
          ))}
        </datalist>
        <button type="submit">Open</button>
      </form>
      {error && <p class="notice error">{error}</p>}
      {data && <ProjectFields key={data.path} data={data} onSaved={setData} />}
    </section>
  );
}

function ProjectFields({ data, onSaved }: { data: ProjectConfig; onSaved: (c: ProjectConfig) => void }) {
  const [name, setName] = useState(data.name);
  const [ignore, setIgnore] = useState(data.ignore.join("\n"));
  const [max, setMax] = useState(data.max_file_size_mb === null ? "" : String(data.max_file_size_mb));
  const [err, setErr] = useState<{ field: string; msg: string } | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const cwd = data.path;
  const fields = ["name", "ignore", "max_file_size_mb"];
  const fail = (e: unknown) => {
    const msg = errText(e);
    setSaved(null);
    setErr({ field: fieldOf(msg, fields), msg });
  };
  const at = (f: string) => (err?.field === f ? err.msg : null);
  return (
    <>
      <form
        class="set-form set-row"
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            const r = await post<ProjectConfig>(`/api/project/rename?cwd=${q(cwd)}`, { name });
            onSaved(r);
            setErr(null);
            setSaved(`Renamed to “${r.name}”`);
          } catch (x) {
            fail(x);
          }
        }}
      >
        <label for="proj-name">Project name</label>
        <input id="proj-name" type="text" value={name} onInput={(e) => setName(e.currentTarget.value)} {...invalid("proj-name-err", at("name"))} />
        <button type="submit" disabled={name === data.name}>
          Rename
        </button>
      </form>
      <FieldError id="proj-name-err" msg={at("name")} />
      <form
        class="set-form set-grid"
        onSubmit={async (e) => {
          e.preventDefault();
          const body = { ignore: ignore.split("\n").map((s) => s.trim()).filter(Boolean), max_file_size_mb: max.trim() === "" ? null : Number(max) };
          try {
            const r = await put<ProjectConfig>(`/api/project/config?cwd=${q(cwd)}`, body);
            onSaved(r);
            setErr(null);
            setSaved("Saved");
          } catch (x) {
            fail(x);
          }
        }}
      >
        <label for="proj-ignore">Ignored by the journal</label>
        <div>
          <textarea id="proj-ignore" rows={4} value={ignore} placeholder="one gitignore pattern per line" onInput={(e) => setIgnore(e.currentTarget.value)} spellcheck={false} {...invalid("proj-ignore-err", at("ignore"))} />
          <FieldError id="proj-ignore-err" msg={at("ignore")} />
          <p class="muted set-desc">Besides .gitignore and {data.default_ignore.slice(0, 6).join(" ")}…</p>
        </div>
        <label for="proj-max">File size cap (MB)</label>
        <div>
          <input id="proj-max" type="number" min={0} value={max} placeholder={`the server's (${data.effective_max_file_size_mb})`} onInput={(e) => setMax(e.currentTarget.value)} {...invalid("proj-max-err", at("max_file_size_mb"))} />
          <FieldError id="proj-max-err" msg={at("max_file_size_mb")} />
          <p class="muted set-desc">In force: {data.effective_max_file_size_mb === 0 ? "no cap" : `${data.effective_max_file_size_mb} MB`}. Journal {data.journal ? "on" : "not started yet"}.</p>
        </div>
        <span />
        <div class="set-row">
          <button type="submit">Save project</button>
          {saved && (
            <span class="ok" role="status">
              {saved}
            </span>
          )}
        </div>
      </form>
      <FieldError id="proj-form-err" msg={err && !err.field ? err.msg : null} />
    </>
  );
}
