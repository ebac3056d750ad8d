// Background tasks (docs/api.md "Tasks"): the agents' background commands,
// newest first, each with its output, tailed while it runs. Polling runs
// only while the pane is shown.

import { useEffect, useRef, useState } from "preact/hooks";
import { get, q } from "../../lib/api";
import { errText } from "./common";

interface Task {
  task_id: string;
  provider: string;
  project: string;
  session_id?: string;
  command?: string;
  cwd?: string;
  size: number;
  updated_at: string;
  running: boolean;
  state?: string;
  exit_code?: number;
  preview?: string;
}
interface Chunk {
  task: Task;
  offset: number;
  next_offset: number;
  content: string;
  eof: boolean;
}

function ago(iso: string): string {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return new Date(iso).toLocaleString();
}

export function Tasks({ visible }: { visible: boolean }) {
  const [tasks, setTasks] = useState<Task[] | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const [running, setRunning] = useState(false);
  const [open, setOpen] = useState<string | null>(null);
  useEffect(() => {
    if (!visible) return;
    let live = true;
    const load = () =>
      get<{ tasks: Task[] }>(`/api/tasks?limit=100${running ? "&running=true" : ""}`).then(
        (r) => live && (setTasks(r.tasks), setErr(null)),
        (e) => live && setErr(errText(e)),
      );
    load();
    const t = setInterval(load, 5000);
    return () => {
      live = false;
      clearInterval(t);
    };
  }, [visible, running]);
  return (
    <section class="set-card" aria-label="Background tasks">
      <h3>Background tasks</h3>
      <label class="set-row">
        <input type="checkbox" checked={running} onChange={(e) => setRunning(e.currentTarget.checked)} /> Running only
      </label>
      {err && <p class="notice error">{err}</p>}
      {tasks && tasks.length === 0 && <p class="muted">No background task{running ? " is running" : " yet"}.</p>}
      <ul class="set-tasks">
        {tasks?.map((t) => (
          <li key={t.task_id}>
            <button type="button" class="set-task" aria-expanded={open === t.task_id} onClick={() => setOpen(open === t.task_id ? null : t.task_id)}>
              <span class={`set-badge ${t.running ? "ok" : ""}`}>{t.running ? "running" : (t.state ?? "ended")}</span>
              <code class="set-grow">{t.command ?? t.task_id}</code>
              <span class="muted">
                {t.provider} · {t.cwd ?? t.project} · {ago(t.updated_at)} · {t.size} B
              </span>
            </button>
            {open === t.task_id && <Output id={t.task_id} visible={visible} />}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** A task's output from the start, then tailed from next_offset while it runs. */
function Output({ id, visible }: { id: string; visible: boolean }) {
  const [text, setText] = useState("");
  const [task, setTask] = useState<Task | null>(null);
  const [err, setErr] = useState<string | null>(null);
  const off = useRef(0);
  const pre = useRef<HTMLPreElement>(null);
  useEffect(() => {
    if (!visible) return;
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      try {
        for (let i = 0; i < 16 && live; i++) {
          const c = await get<Chunk>(`/api/tasks/${q(id)}?offset=${off.current}&limit=65536`);
          if (!live) return;
          if (c.offset === 0 && off.current !== 0) setText(c.content);
          else if (c.content) setText((t) => (t + c.content).slice(-1_000_000));
          off.current = c.next_offset;
          setTask(c.task);
          setErr(null);
          if (c.eof) break;
        }
        if (live) timer = setTimeout(read, 2000);
      } catch (e) {
        if (live) setErr(errText(e));
      }
    };
    read();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [id, visible]);
  useEffect(() => {
    const el = pre.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [text]);
  return (
    <div class="set-output">
      {err && <p class="notice error">{err}</p>}
      {task && (
        <p class="muted">
          {task.running ? "Running" : `Ended${task.exit_code !== undefined ? ` with code ${task.exit_code}` : ""}`} · {task.size} bytes
        </p>
      )}
      <pre ref={pre} aria-label={`Output of task ${id}`} tabIndex={0}>
        {text || "(no output yet)"}
      </pre>
    </div>
  );
}
