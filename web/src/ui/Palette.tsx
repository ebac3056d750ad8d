// The command palette (dialog "Command palette") and the shortcuts sheet.
// Placeholder of the pane shell: replaced by the settings/palette work.
import { helpOpen, paletteOpen } from "../state/app";

export function Palette() {
  return (
    <div role="dialog" aria-label="Command palette" class="palette">
      <button type="button" onClick={() => (paletteOpen.value = false)}>
        Close
      </button>
    </div>
  );
}

export function HelpSheet() {
  return (
    <div role="dialog" aria-label="Keyboard shortcuts" class="palette">
      <button type="button" onClick={() => (helpOpen.value = false)}>
        Close
      </button>
    </div>
  );
}
