// Upload into a directory of the project. The file routes write text
// (POST /api/file/write refuses NUL bytes), so a text file (valid UTF-8
// without NUL) is created there, never replacing one that exists
// (expected_version "" means create only). Anything else goes through
// POST /api/upload-file into the session's uploads (the only route that takes
// bytes), and the note says where it went.

import { ApiError, post, q } from "../../lib/api";
import { writeFile } from "./api";
import { join } from "./tree";

export interface UploadNote {
  name: string;
  ok: boolean;
  message: string;
}

/** The text of bytes when they are UTF-8 without NUL, else null. */
export function asText(bytes: Uint8Array): string | null {
  if (bytes.includes(0)) return null;
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}

export async function uploadOne(sessionId: string, dir: string, file: File): Promise<UploadNote> {
  const bytes = new Uint8Array(await file.arrayBuffer());
  const text = asText(bytes);
  const path = join(dir, file.name.replace(/[/\\]/g, "_"));
  if (text !== null) {
    try {
      await writeFile({ path, content: text, expected_version: "" });
      return { name: file.name, ok: true, message: `${file.name}: created in ${dir}` };
    } catch (e) {
      const er = e as ApiError;
      return { name: file.name, ok: false, message: er.status === 409 ? `${file.name}: not uploaded, ${dir} already holds a file of that name` : `${file.name}: ${er.message}` };
    }
  }
  try {
    const fd = new FormData();
    fd.append("file", file);
    const r = await post<{ path: string }>(`/api/upload-file?session=${q(sessionId)}`, fd);
    return { name: file.name, ok: true, message: `${file.name} is binary (the file routes write text only): stored in the session's uploads, ${r.path}` };
  } catch (e) {
    return { name: file.name, ok: false, message: `${file.name}: ${(e as ApiError).message}` };
  }
}
