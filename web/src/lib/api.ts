// HTTP calls to the gateway. Every failure becomes an ApiError carrying the
// server's {error, message} envelope, so the UI can say what went wrong.

export class ApiError extends Error {
  constructor(public status: number, public code: string, message: string, public body?: any) {
    super(message);
  }
}

/** Called when the gateway answers 401: the cookie is gone, sign in again. */
export let onUnauthorized = () => {
  location.assign("/login?next=" + encodeURIComponent(location.pathname + location.search));
};
export function setOnUnauthorized(f: () => void) {
  onUnauthorized = f;
}

export async function api<T = any>(method: string, path: string, body?: unknown, init?: RequestInit): Promise<T> {
  const headers: Record<string, string> = {};
  let payload: BodyInit | undefined;
  if (body instanceof FormData) {
    payload = body;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  let resp: Response;
  try {
    resp = await fetch(path, { method, headers, body: payload, credentials: "same-origin", ...init });
  } catch (e) {
    throw new ApiError(0, "network", "the server cannot be reached: " + (e as Error).message);
  }
  const text = await resp.text();
  let data: any = undefined;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
  }
  if (!resp.ok) {
    if (resp.status === 401) onUnauthorized();
    const code = data?.error ?? "http_" + resp.status;
    const msg = data?.message || data?.error || `${method} ${path}: ${resp.status} ${resp.statusText}`;
    throw new ApiError(resp.status, code, msg, data);
  }
  return data as T;
}

export const get = <T = any>(path: string) => api<T>("GET", path);
export const post = <T = any>(path: string, body?: unknown) => api<T>("POST", path, body);
export const put = <T = any>(path: string, body?: unknown) => api<T>("PUT", path, body);
export const patch = <T = any>(path: string, body?: unknown) => api<T>("PATCH", path, body);
export const del = <T = any>(path: string) => api<T>("DELETE", path);

export const q = encodeURIComponent;

/** The WebSocket URL of a path on this origin. */
export function wsURL(path: string): string {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  return `${proto}//${location.host}${path}`;
}
