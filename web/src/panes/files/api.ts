// The files pane's calls to the gateway (shadow's file, search and view
// routes; docs/api.md "Files, search and view").

import { get, post, q } from "../../lib/api";
import type { Entry } from "./tree";

export interface Listing {
  path: string;
  truncated: boolean;
  entries: Entry[];
}
export interface FileText {
  path: string;
  content: string;
  size: number;
  mtime: string;
  version: string;
}
export interface Written {
  path: string;
  size: number;
  mtime: string;
  version: string;
}
export interface Match {
  path: string;
  line: number;
  column: number;
  text: string;
}
export interface SearchResult {
  path: string;
  engine: string;
  truncated: boolean;
  matches: Match[];
}

export const listDir = (path: string) => get<Listing>(`/api/files?path=${q(path)}`);
export const readFile = (path: string) => get<FileText>(`/api/file?path=${q(path)}`);
export const writeFile = (body: { path: string; content: string; expected_version?: string; create_dirs?: boolean }) => post<Written>("/api/file/write", body);
export const search = (cwd: string, text: string, maxResults = 500) => get<SearchResult>(`/api/search?cwd=${q(cwd)}&q=${q(text)}&max_results=${maxResults}`);

export const rawURL = (path: string, download = false) => `/api/file-raw?path=${q(path)}${download ? "&download=1" : ""}`;
export const renderURL = (path: string) => `/api/browser/render?path=${q(path)}`;
export const proxyURL = (url: string) => `/api/browser/proxy?url=${q(url)}`;

const IMAGE = /\.(png|jpe?g|gif|webp|avif|bmp|ico|svg)$/i;
const VIDEO = /\.(mp4|webm|ogv|mov)$/i;
const AUDIO = /\.(mp3|wav|ogg|oga|flac|m4a|aac|opus)$/i;
const HTML = /\.(html?|xhtml)$/i;

/** How the viewer shows a file, by its name: text is read as text; the others through their raw bytes. */
export function kindOf(path: string): "image" | "video" | "audio" | "html" | "text" {
  if (IMAGE.test(path)) return "image";
  if (VIDEO.test(path)) return "video";
  if (AUDIO.test(path)) return "audio";
  if (HTML.test(path)) return "html";
  return "text";
}
