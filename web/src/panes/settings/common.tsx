// What the settings sections share: loading a route's answer, the server's
// validation message shown at the field it names, and the confirm dialog.

import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, get } from "../../lib/api";

export function errText(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  return (e as Error)?.message ?? String(e);
}

/** GET path whenever it changes (null: nothing yet); reload() asks again. */
export function useGet<T>(path: string | null) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const seq = useRef(0);
  const reload = useCallback(async () => {
    if (!path) return;
    const n = ++seq.current;
    setLoading(true);
    try {
      const d = await get<T>(path);
      if (n === seq.current) {
        setData(d);
        setError(null);
      }
    } catch (e) {
      if (n === seq.current) setError(errText(e));
    } finally {
      if (n === seq.current) setLoading(false);
    }
  }, [path]);
  useEffect(() => {
    setData(null);
    reload();
  }, [reload]);
  return { data, setData, error, loading, reload };
}

/**
 * Which field a server message is about: the messages start with the
 * field's name ("permission_mode \"yolo\": use one of ...",
 * "extra_dirs: ...", "path \"x\": missing"). Unknown: "" (the form's).
 */
export function fieldOf(message: string, fields: string[]): string {
  const m = /^([\w.]+)/.exec(message);
  if (m && fields.includes(m[1])) return m[1];
  for (const f of fields) if (message.includes(f)) return f;
  return "";
}

/** A message under a field, named by the field's aria-describedby (id). */
export function FieldError({ id, msg }: { id: string; msg?: string | null }) {
  if (!msg) return null;
  return (
    <p class="field-error" id={id} role="alert">
      {msg}
    </p>
  );
}

/** The props that tie an input to its error message. */
export function invalid(id: string, msg?: string | null) {
  return msg ? { "aria-invalid": true as const, "aria-describedby": id } : {};
}

/** A modal dialog that spells out what will happen, with "Confirm" and "Cancel". */
export function Confirm(props: { title: string; children: ComponentChildren; confirm?: string; danger?: boolean; busy?: boolean; onConfirm: () => void; onCancel: () => void }) {
  const cancel = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    cancel.current?.focus();
    return () => before?.isConnected && before.focus();
  }, []);
  return (
    <div class="set-overlay" onMouseDown={(e) => e.target === e.currentTarget && props.onCancel()}>
      <div
        role="dialog"
        aria-modal="true"
        aria-label={props.title}
        class="set-dialog"
        onKeyDown={(e) => {
          if (e.key === "Escape") {
            e.stopPropagation();
            props.onCancel();
          }
        }}
      >
        <h3>{props.title}</h3>
        <div class="set-dialog-body">{props.children}</div>
        <div class="set-actions">
          <button type="button" ref={cancel} onClick={props.onCancel} disabled={props.busy}>
            Cancel
          </button>
          <button type="button" class={props.danger ? "danger" : "primary"} onClick={props.onConfirm} disabled={props.busy}>
            {props.confirm ?? "Confirm"}
          </button>
        </div>
      </div>
    </div>
  );
}

/** A secret shown once: a read-only field to copy from. */
export function ShownOnce({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => box.current?.scrollIntoView?.({ block: "nearest" }), []);
  return (
    <div class="set-secret" ref={box}>
      <label>
        {label}
        <input type="text" readOnly value={value} aria-label={label} onFocus={(e) => e.currentTarget.select()} spellcheck={false} />
      </label>
      <button
        type="button"
        class="mini"
        onClick={() =>
          navigator.clipboard?.writeText(value).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        {copied ? "Copied" : "Copy"}
      </button>
      <p class="muted">Shown this once: copy it now. It is also the api_token line of the server's config file.</p>
    </div>
  );
}

/** The known projects: the working directories of the listed sessions. */
export function knownProjects(list: { cwd?: string | null }[]): string[] {
  return [...new Set(list.map((s) => s.cwd).filter((c): c is string => !!c))].sort();
}
