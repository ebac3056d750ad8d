// The terminal sessions' views: one chunk, loaded the first time the
// sidebar's "Terminal" tab or a /cli page shows.
import "./cli.css";

export { CliList } from "./CliList";
export { CliSessionView } from "./CliSessionView";
