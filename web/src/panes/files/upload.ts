// Upload into a directory of the project: POST /api/file/upload?path=<dir>,
// one multipart request per file. The server cleans the name and never
// replaces a file that exists (409, said as such here).

import { ApiError, post, q } from "../../lib/api";

export interface UploadNote {
  name: string;
  ok: boolean;
  message: string;
}

export async function uploadOne(dir: string, file: File): Promise<UploadNote> {
  const fd = new FormData();
  fd.append("file", file);
  try {
    const r = await post<{ path: string }>(`/api/file/upload?path=${q(dir)}`, fd);
    return { name: file.name, ok: true, message: `${file.name}: created as ${r.path}` };
  } catch (e) {
    const er = e as ApiError;
    return { name: file.name, ok: false, message: er.status === 409 ? `${file.name}: not uploaded, ${dir} already holds a file of that name` : `${file.name}: ${er.message}` };
  }
}
