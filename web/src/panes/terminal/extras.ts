// The addons a terminal can start without, in a chunk of their own (loaded as
// the pane mounts, beside xterm.js itself): find, serialize, Unicode 11 widths.
export { SearchAddon } from "@xterm/addon-search";
export { SerializeAddon } from "@xterm/addon-serialize";
export { Unicode11Addon } from "@xterm/addon-unicode11";
