// The sessions started in a terminal: search (the server matches titles and
// projects), a provider filter, and the rows newest first with provider,
// project, title, last activity and size. The sidebar's "Terminal" tab shows
// it compact; /cli shows it as a page (the phone's big list).

import { useEffect, useRef } from "preact/hooks";
import { baseName, fmtAgo, fmtBytes } from "../../lib/format";
import { navigate, route } from "../../state/app";
import { CLI_PROVIDERS, cliList, cliPath, cliProviderLabel, loadCliList, type CliSession } from "../../state/cli";

export function CliList({ page = false }: { page?: boolean }) {
  const items = cliList.items.value;
  const total = cliList.total.value;
  const cur = route.value.cli;
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const idp = page ? "clip" : "clis";

  useEffect(() => {
    if (!cliList.loaded.peek()) loadCliList();
    return () => {
      if (timer.current) clearTimeout(timer.current);
    };
  }, []);

  const onQuery = (v: string) => {
    cliList.query.value = v;
    if (timer.current) clearTimeout(timer.current);
    timer.current = setTimeout(() => loadCliList(), 250);
  };

  return (
    <div class={`clilist ${page ? "clipage" : ""}`}>
      {page && <h1>Terminal sessions</h1>}
      {page && <p class="muted">Claude Code and Codex sessions run in a terminal on this machine, read from their files. Open one to read it; Continue here to go on with it in svc-code.</p>}
      <form
        role="search"
        class="clifilter"
        onSubmit={(e) => {
          e.preventDefault();
          loadCliList();
        }}
      >
        <label class="sr-only" for={`${idp}-q`}>
          Search terminal sessions
        </label>
        <input id={`${idp}-q`} type="search" placeholder="Search prompts and projects" value={cliList.query.value} onInput={(e) => onQuery(e.currentTarget.value)} />
        <label class="sr-only" for={`${idp}-prov`}>
          Provider
        </label>
        <select
          id={`${idp}-prov`}
          value={cliList.provider.value}
          onChange={(e) => {
            cliList.provider.value = e.currentTarget.value as any;
            loadCliList();
          }}
        >
          <option value="">All</option>
          {CLI_PROVIDERS.map((p) => (
            <option key={p.name} value={p.name}>
              {p.label}
            </option>
          ))}
        </select>
      </form>
      {cliList.error.value && (
        <p class="error pad" role="alert">
          Terminal sessions: {cliList.error.value}{" "}
          <button type="button" class="mini" onClick={() => loadCliList()}>
            Try again
          </button>
        </p>
      )}
      {cliList.loaded.value && items.length === 0 && !cliList.error.value && (
        <p class="muted pad">{cliList.query.value || cliList.provider.value ? "No terminal session matches." : "No terminal sessions found (none in ~/.claude/projects or ~/.codex/sessions)."}</p>
      )}
      {!cliList.loaded.value && cliList.loading.value && (
        <p class="muted pad" role="status">
          Reading terminal sessions…
        </p>
      )}
      <ul class="plain clirows" aria-label="Terminal sessions">
        {items.map((s) => (
          <CliRow key={s.provider + s.id} s={s} current={!!cur && cur.provider === s.provider && cur.id === s.id} />
        ))}
      </ul>
      {cliList.loaded.value && (
        <div class="clifoot muted">
          <span role="status">
            {items.length} of {total}
          </span>
          {items.length < total && (
            <button type="button" class="mini" disabled={cliList.loading.value} onClick={() => loadCliList(true)}>
              Load more
            </button>
          )}
          <button type="button" class="mini" disabled={cliList.loading.value} onClick={() => loadCliList()}>
            Refresh
          </button>
        </div>
      )}
    </div>
  );
}

function CliRow({ s, current }: { s: CliSession; current: boolean }) {
  const href = cliPath(s);
  const title = s.title || "(no prompt yet)";
  return (
    <li class={`clirow ${current ? "current" : ""}`}>
      <a href={href} aria-current={current ? "page" : undefined} onClick={(e) => (e.ctrlKey || e.metaKey || e.shiftKey ? undefined : (e.preventDefault(), navigate(href)))}>
        <span class="stitle" title={s.title}>
          {title}
        </span>
        <span class="climeta">
          <span class={`provtag prov-${s.provider}`}>{cliProviderLabel(s.provider)}</span>
          {s.svc_session_id && <span class="provtag" title="An svc-code session runs this conversation">in svc-code</span>}
          <span class="cliproj" title={s.project}>
            {baseName(s.project) || "(no directory)"}
          </span>
          <span>
            <time dateTime={s.last_activity} title={new Date(s.last_activity).toLocaleString()}>
              {fmtAgo(s.last_activity)}
            </time>{" "}
            · {fmtBytes(s.size)}
          </span>
        </span>
      </a>
    </li>
  );
}
