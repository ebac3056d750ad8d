// An open file's editing state, as data: the text and version last read or
// saved (the baseline), whether the buffer differs from it, and a conflict
// when a save found another version on disk. Saving always names the version
// it was made against (POST /api/file/write's expected_version), so nothing
// is overwritten silently; a 409 becomes a conflict, and each way out of it
// (keep mine, take theirs, merge by hand) is a pure decision tested here.

/** What the server holds now when a save was refused (null: the file is gone). */
export interface Theirs {
  content: string;
  version: string;
}

export interface Conflict {
  /** The text the user tried to save. */
  mine: string;
  /** The file on disk now, or null when it was deleted. */
  theirs: Theirs | null;
}

export interface Doc {
  path: string;
  /** The content as last read or saved. */
  savedText: string;
  /** Its version (sha256:…); "" for a file that does not exist yet. */
  version: string;
  /** The editor's text. */
  text: string;
  saving: boolean;
  conflict: Conflict | null;
  error: string | null;
}

export type Choice = "mine" | "theirs" | "manual";

export function openDoc(path: string, content: string, version: string): Doc {
  return { path, savedText: content, version, text: content, saving: false, conflict: null, error: null };
}

export const dirty = (d: Doc) => d.text !== d.savedText;

export function edit(d: Doc, text: string): Doc {
  return d.text === text ? d : { ...d, text, error: null };
}

/** The body of POST /api/file/write for the buffer as it is. */
export function saveRequest(d: Doc): { path: string; content: string; expected_version: string } {
  return { path: d.path, content: d.text, expected_version: d.version };
}

/** A save succeeded: what was sent is now the baseline (edits typed meanwhile stay dirty). */
export function saved(d: Doc, sent: string, version: string): Doc {
  return { ...d, savedText: sent, version, saving: false, conflict: null, error: null };
}

/** A save was refused with 409: the conflict holds mine and theirs. */
export function conflicted(d: Doc, mine: string, theirs: Theirs | null): Doc {
  return { ...d, saving: false, conflict: { mine, theirs }, error: null };
}

/**
 * What a choice does. "theirs" writes nothing: the disk already holds it, and
 * it becomes the buffer and the baseline. "mine" and "manual" write their text
 * against the version now on disk (or create-only when the file is gone), so a
 * third writer in between is caught again by a new 409.
 */
export function resolve(d: Doc, choice: Choice, manualText?: string): { doc: Doc; write: { path: string; content: string; expected_version: string } | null } {
  const c = d.conflict;
  if (!c) throw new Error("no conflict to resolve");
  const base = c.theirs ? c.theirs.version : "";
  if (choice === "theirs") {
    if (!c.theirs) throw new Error("the file was deleted: there is no other version to take");
    const t = c.theirs.content;
    return { doc: { ...d, text: t, savedText: t, version: c.theirs.version, conflict: null }, write: null };
  }
  const content = choice === "mine" ? c.mine : (manualText ?? c.mine);
  // The buffer keeps the chosen text; the baseline is theirs until the write succeeds.
  return {
    doc: { ...d, text: content, savedText: c.theirs?.content ?? "", version: base, saving: true, conflict: null },
    write: { path: d.path, content, expected_version: base },
  };
}

/** The current version named in a 409's message ("… the file's version is now sha256:…"), if any. */
export function versionInMessage(msg: string): string | null {
  return /sha256:[0-9a-f]{64}/.exec(msg)?.[0] ?? null;
}
