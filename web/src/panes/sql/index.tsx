// The sql pane (issue 18). Placeholder of the pane shell: replaced by the pane's own code.
import type { PaneProps } from "../../ui/Panes";

export default function Pane(_: PaneProps) {
  return <p class="muted pad">This pane is being built.</p>;
}
