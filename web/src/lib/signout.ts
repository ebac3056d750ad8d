// Sign out: POST /api/logout clears this browser's cookie and revokes it on
// the server (docs/api.md "POST /api/logout"); the sign-in page then says
// how it went (?signed_out=1, or =pending when Redis could not record it).

import { post } from "./api";

/** Signs this browser out, then goes (go) to the sign-in page with the outcome. */
export async function signOut(go: (url: string) => void = (url) => location.assign(url)): Promise<void> {
  let where = "/login?signed_out=1";
  try {
    const r = await post<{ revoked?: boolean; pending?: boolean }>("/api/logout");
    if (r?.pending) where = "/login?signed_out=pending";
  } catch {
    // Not confirmed (no answer): the sign-in page claims nothing.
    where = "/login";
  }
  go(where);
}
