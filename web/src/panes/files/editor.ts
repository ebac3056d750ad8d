// CodeMirror 6 for the files pane, loaded only when a file is edited: an
// editor whose language is chosen by the file's name (@codemirror/language-data
// loads the grammar on demand), and the merge view shown after a conflict
// (@codemirror/merge: mine on the left, editable; theirs on the right, read
// only, each of its changes copied into mine by the arrow beside it).

import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { bracketMatching, defaultHighlightStyle, foldGutter, indentOnInput, LanguageDescription, syntaxHighlighting } from "@codemirror/language";
import { languages } from "@codemirror/language-data";
import { MergeView } from "@codemirror/merge";
import { highlightSelectionMatches, searchKeymap } from "@codemirror/search";
import { Compartment, EditorState, type Extension } from "@codemirror/state";
import { drawSelection, EditorView, highlightActiveLine, highlightActiveLineGutter, keymap, lineNumbers } from "@codemirror/view";

const theme = EditorView.theme({
  "&": { height: "100%", fontSize: "13px", color: "var(--fg)", backgroundColor: "var(--panel)" },
  ".cm-scroller": { fontFamily: "ui-monospace, SFMono-Regular, Menlo, monospace", lineHeight: "1.5" },
  ".cm-gutters": { backgroundColor: "var(--panel2)", color: "var(--muted)", borderRight: "1px solid var(--border)" },
  ".cm-activeLine": { backgroundColor: "color-mix(in srgb, var(--accent) 8%, transparent)" },
  ".cm-activeLineGutter": { backgroundColor: "color-mix(in srgb, var(--accent) 14%, transparent)" },
  "&.cm-focused .cm-cursor": { borderLeftColor: "var(--fg)" },
  ".cm-selectionBackground, &.cm-focused .cm-selectionBackground": { backgroundColor: "color-mix(in srgb, var(--accent) 28%, transparent) !important" },
});

function base(name: string, lang: Compartment): Extension[] {
  return [
    lineNumbers(),
    highlightActiveLineGutter(),
    foldGutter(),
    history(),
    drawSelection(),
    indentOnInput(),
    bracketMatching(),
    highlightActiveLine(),
    highlightSelectionMatches(),
    syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
    keymap.of([...defaultKeymap, ...historyKeymap, ...searchKeymap, indentWithTab]),
    theme,
    lang.of([]),
    EditorView.contentAttributes.of({ "aria-label": `Edit ${name}` }),
  ];
}

/** Loads the language of file name into the compartment (nothing when none matches). */
async function loadLanguage(view: EditorView, name: string, lang: Compartment) {
  const desc = LanguageDescription.matchFilename(languages, name);
  if (!desc) return;
  try {
    const support = await desc.load();
    view.dispatch({ effects: lang.reconfigure(support) });
  } catch {
    /* plain text stays */
  }
}

export interface Editor {
  text(): string;
  setText(t: string): void;
  focus(): void;
  gotoLine(n: number): void;
  destroy(): void;
}

/** An editor of doc in parent; onChange gets the text after each change, onSave runs on Ctrl/⌘+S. */
export function createEditor(parent: HTMLElement, doc: string, name: string, onChange: (t: string) => void, onSave: () => void): Editor {
  const lang = new Compartment();
  const view = new EditorView({
    parent,
    state: EditorState.create({
      doc,
      extensions: [
        keymap.of([{ key: "Mod-s", preventDefault: true, run: () => (onSave(), true) }]),
        ...base(name, lang),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) onChange(u.state.doc.toString());
        }),
      ],
    }),
  });
  void loadLanguage(view, name, lang);
  return {
    text: () => view.state.doc.toString(),
    setText: (t) => view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: t } }),
    focus: () => view.focus(),
    gotoLine: (n) => {
      const line = view.state.doc.line(Math.max(1, Math.min(n, view.state.doc.lines)));
      view.dispatch({ selection: { anchor: line.from }, effects: EditorView.scrollIntoView(line.from, { y: "center" }) });
    },
    destroy: () => view.destroy(),
  };
}

export interface Merge {
  /** The merged text (the left side). */
  text(): string;
  destroy(): void;
}

/**
 * The merge view of a conflict: mine (left) against theirs (right, read only).
 * With editable, the left side takes edits and the arrows copy their changes into it.
 */
export function createMerge(parent: HTMLElement, mine: string, theirs: string, name: string, editable: boolean): Merge {
  const langA = new Compartment();
  const langB = new Compartment();
  const mv = new MergeView({
    parent,
    a: { doc: mine, extensions: [...base(name + " (mine)", langA), EditorState.readOnly.of(!editable), EditorView.editable.of(editable)] },
    b: { doc: theirs, extensions: [...base(name + " (theirs)", langB), EditorState.readOnly.of(true), EditorView.editable.of(false)] },
    revertControls: editable ? "b-to-a" : undefined,
    highlightChanges: true,
    gutter: true,
    collapseUnchanged: { margin: 3, minSize: 8 },
  });
  void loadLanguage(mv.a, name, langA);
  void loadLanguage(mv.b, name, langB);
  return { text: () => mv.a.state.doc.toString(), destroy: () => mv.destroy() };
}
