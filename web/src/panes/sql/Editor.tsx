// The SQL editor: CodeMirror 6 with PostgreSQL highlighting, completion of
// keywords and of the analytics tables and columns (from
// /api/shadow-db/schema), and Ctrl+Enter (⌘+Enter) to run. Its contenteditable
// is the textbox "SQL".

import { autocompletion, closeBrackets, closeBracketsKeymap, closeCompletion, completionKeymap, type Completion, type CompletionContext, type CompletionResult } from "@codemirror/autocomplete";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { PostgreSQL, sql, type SQLNamespace } from "@codemirror/lang-sql";
import { bracketMatching, HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { Compartment, EditorState, Prec } from "@codemirror/state";
import { EditorView, highlightActiveLine, keymap, lineNumbers, placeholder } from "@codemirror/view";
import { tags as t } from "@lezer/highlight";
import { useEffect, useRef } from "preact/hooks";

export interface SchemaTable {
  name: string;
  kind: "table" | "view";
  description?: string;
  columns: { name: string; type: string; nullable: boolean; description?: string }[];
}

/** The completion namespace of the schema: each table with its columns (type as detail, description as info). */
export function schemaNamespace(tables: SchemaTable[]): SQLNamespace {
  const ns: Record<string, SQLNamespace> = {};
  for (const tb of tables) {
    const cols: Completion[] = tb.columns.map((c) => ({ label: c.name, type: "property", detail: c.type + (c.nullable ? "" : " not null"), info: c.description || undefined }));
    ns[tb.name] = { self: { label: tb.name, type: "type", detail: tb.kind, info: tb.description || undefined }, children: cols };
  }
  return ns;
}

/**
 * Completion of bare column names (lang-sql completes a column after its
 * table's name and a dot): every column of every table, those of the tables
 * the query names first, each with its table(s) and type.
 */
export function columnSource(tables: SchemaTable[]) {
  const byName = new Map<string, { tables: string[]; type: string; info?: string }>();
  for (const tb of tables)
    for (const c of tb.columns) {
      const have = byName.get(c.name);
      if (have) have.tables.push(tb.name);
      else byName.set(c.name, { tables: [tb.name], type: c.type, info: c.description || undefined });
    }
  return (ctx: CompletionContext): CompletionResult | null => {
    const word = ctx.matchBefore(/[A-Za-z_][\w$]*/);
    if (!word && !ctx.explicit) return null;
    const from = word ? word.from : ctx.pos;
    if (from > 0 && ctx.state.sliceDoc(from - 1, from) === ".") return null;
    const text = ctx.state.doc.toString().toLowerCase();
    const named = new Set(tables.map((t) => t.name).filter((n) => new RegExp(`\\b${n}\\b`).test(text)));
    const options: Completion[] = [...byName].map(([name, c]) => ({
      label: name,
      type: "property",
      detail: `${c.tables.join(", ")} · ${c.type}`,
      info: c.info,
      boost: c.tables.some((t) => named.has(t)) ? 1 : -1,
    }));
    return { from, options, validFor: /^[\w$]*$/ };
  };
}

// Colours from the theme's variables (sql.css sets them for light and dark).
const highlight = HighlightStyle.define([
  { tag: t.keyword, color: "var(--sql-keyword)", fontWeight: "600" },
  { tag: [t.string, t.special(t.string)], color: "var(--sql-string)" },
  { tag: [t.number, t.bool, t.null], color: "var(--sql-number)" },
  { tag: t.comment, color: "var(--muted)", fontStyle: "italic" },
  { tag: [t.typeName, t.standard(t.name)], color: "var(--sql-type)" },
  { tag: [t.operator, t.punctuation], color: "var(--muted)" },
  { tag: t.special(t.name), color: "var(--sql-type)" },
]);

const look = EditorView.theme({
  "&": { backgroundColor: "var(--panel)", color: "var(--fg)", fontSize: "13px", height: "100%" },
  ".cm-content": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace", caretColor: "var(--fg)" },
  ".cm-gutters": { backgroundColor: "var(--panel2)", color: "var(--muted)", borderRight: "1px solid var(--border)" },
  ".cm-activeLine": { backgroundColor: "color-mix(in srgb, var(--accent) 7%, transparent)" },
  ".cm-activeLineGutter": { backgroundColor: "transparent" },
  "&.cm-focused": { outline: "none" },
  ".cm-scroller": { overflow: "auto" },
  ".cm-selectionBackground, &.cm-focused .cm-selectionBackground, ::selection": { backgroundColor: "color-mix(in srgb, var(--accent) 28%, transparent) !important" },
  ".cm-tooltip": { backgroundColor: "var(--panel)", color: "var(--fg)", border: "1px solid var(--border)" },
  ".cm-tooltip-autocomplete ul li[aria-selected]": { backgroundColor: "var(--accent)", color: "var(--accent-fg)" },
  ".cm-completionDetail": { color: "var(--muted)", fontStyle: "normal", marginLeft: "8px" },
  ".cm-placeholder": { color: "var(--muted)" },
});

export interface EditorHandle {
  /** The text (and the completion list is closed: the query is about to run). */
  get(): string;
  set(text: string): void;
  focus(): void;
}

export function SqlEditor({ initial, schema, onRun, onChange, handle }: { initial: string; schema: SchemaTable[] | null; onRun: () => void; onChange: (s: string) => void; handle: { current: EditorHandle | null } }) {
  const box = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const lang = useRef(new Compartment());
  const run = useRef(onRun);
  run.current = onRun;
  const change = useRef(onChange);
  change.current = onChange;

  useEffect(() => {
    const runKey = (v: EditorView) => (closeCompletion(v), run.current(), true);
    const v = new EditorView({
      parent: box.current!,
      state: EditorState.create({
        doc: initial,
        extensions: [
          // Ahead of the completion keymap, so Ctrl+Enter runs even with the list open.
          Prec.highest(keymap.of([{ key: "Ctrl-Enter", run: runKey }, { key: "Mod-Enter", run: runKey }])),
          lineNumbers(),
          history(),
          bracketMatching(),
          closeBrackets(),
          highlightActiveLine(),
          autocompletion({ activateOnTyping: true, icons: false }),
          keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap, indentWithTab]),
          lang.current.of(sql({ dialect: PostgreSQL, upperCaseKeywords: true })),
          syntaxHighlighting(highlight),
          look,
          placeholder("SELECT day, model, sum(cost) FROM turn_costs GROUP BY 1, 2 ORDER BY 1"),
          EditorView.lineWrapping,
          EditorView.contentAttributes.of({ "aria-label": "SQL", spellcheck: "false", autocapitalize: "off", autocorrect: "off" }),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) change.current(u.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = v;
    handle.current = {
      get: () => {
        closeCompletion(v);
        return v.state.doc.toString();
      },
      set: (text) => v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: text }, selection: { anchor: text.length } }),
      focus: () => v.focus(),
    };
    return () => {
      v.destroy();
      view.current = null;
      handle.current = null;
    };
  }, []);

  useEffect(() => {
    if (!schema || !view.current) return;
    view.current.dispatch({
      effects: lang.current.reconfigure([
        sql({ dialect: PostgreSQL, upperCaseKeywords: true, schema: schemaNamespace(schema) }),
        PostgreSQL.language.data.of({ autocomplete: columnSource(schema) }),
      ]),
    });
  }, [schema]);

  return <div class="sqleditor" ref={box} />;
}
