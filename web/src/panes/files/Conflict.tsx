// A save refused with 409: the file changed on disk since it was read. Shows
// the other version beside mine (the merge view) and the three ways out: keep
// mine (written over theirs, knowingly), take theirs (nothing written), or
// merge by hand (edit my side, copy their changes across, then save). Each
// write names the version now on disk, so a third writer is caught again.

import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "../../lib/api";
import { writeFile } from "./api";
import { resolve, saved, type Choice, type Doc } from "./doc";
import type { Merge } from "./editor";

interface Props {
  doc: Doc;
  name: string;
  onResolved: (d: Doc) => void;
  /** Reads theirs again after another 409 and shows the new conflict. */
  refetch: (mine: string) => Promise<void>;
}

export function Conflict({ doc, name, onResolved, refetch }: Props) {
  const c = doc.conflict!;
  const host = useRef<HTMLDivElement>(null);
  const merge = useRef<Merge | null>(null);
  const [manual, setManual] = useState(false);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState<string | null>(null);

  useEffect(() => {
    let live = true;
    import("./editor").then((m) => {
      if (!live || !host.current) return;
      merge.current?.destroy();
      merge.current = m.createMerge(host.current, c.mine, c.theirs?.content ?? "", name, manual);
    });
    return () => {
      live = false;
      merge.current?.destroy();
      merge.current = null;
    };
  }, [c, manual]);

  const choose = async (choice: Choice) => {
    setErr(null);
    const r = resolve(doc, choice, choice === "manual" ? merge.current?.text() : undefined);
    if (!r.write) {
      onResolved(r.doc);
      return;
    }
    setBusy(true);
    onResolved({ ...r.doc, conflict: c }); // keep the conflict shown while the write runs
    try {
      const w = await writeFile(r.write);
      onResolved(saved({ ...r.doc, conflict: null }, r.write.content, w.version));
    } catch (e) {
      const er = e as ApiError;
      if (er.status === 409) await refetch(r.write.content);
      else setErr(er.message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="fconflict" role="region" aria-label="Conflict">
      <p role="alert">
        <strong>{name} changed on disk since you opened it</strong> (another tab, the agent or a shell wrote it). Your version was <strong>not</strong> saved.{" "}
        {c.theirs ? "Their version is on the right, yours on the left." : "The file has been deleted since."}
      </p>
      <div class="fconflict-actions">
        <button type="button" class="mini" disabled={busy} onClick={() => choose("mine")} title={c.theirs ? "Write your version over theirs" : "Create the file again with your version"}>
          Keep mine
        </button>
        <button type="button" class="mini" disabled={busy || !c.theirs} onClick={() => choose("theirs")} title="Drop your changes and edit their version">
          Take theirs
        </button>
        {!manual ? (
          <button type="button" class="mini" disabled={busy} onClick={() => setManual(true)}>
            Merge by hand
          </button>
        ) : (
          <button type="button" class="mini primary" disabled={busy} onClick={() => choose("manual")}>
            Save merged
          </button>
        )}
      </div>
      {manual && <p class="muted">Edit the left side; the arrows copy each of their changes into it. Then Save merged.</p>}
      {err && (
        <p class="ferr" role="alert">
          {err}
        </p>
      )}
      <div class="fmerge" ref={host} aria-label={`Your version and theirs of ${name}`} />
    </section>
  );
}
