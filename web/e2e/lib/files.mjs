// @ts-check
// Helpers of the files and git pane tests, written against the pane's
// accessible names (issue 18 item 9: the tree "Files", the textbox "Search files").
import { STEP_MS, until } from './app.mjs';

/** The tree "Files". @param {import('playwright-core').Page} page */
export const filesTree = (page) => page.getByRole('tree', { name: 'Files', exact: true });

/** A row of the tree by its name. @param {import('playwright-core').Page} page @param {string} name */
export const treeItem = (page, name) => filesTree(page).getByRole('treeitem', { name, exact: true });

/** CodeMirror's editable content of a file (its aria-label is "Edit <name>"). @param {import('playwright-core').Page} page @param {string} name */
export const editorOf = (page, name) => page.getByRole('textbox', { name: `Edit ${name}`, exact: true });

/**
 * Opens the editor of the shown file, puts the cursor at the end of the text and types text.
 * @param {import('playwright-core').Page} page @param {string} name @param {string} text
 */
export async function editAndType(page, name, text) {
  if (!(await editorOf(page, name).isVisible())) await page.getByRole('button', { name: 'Edit', exact: true }).click();
  const ed = editorOf(page, name);
  await ed.click();
  await page.keyboard.press('ControlOrMeta+End');
  await page.keyboard.type(text);
}

/**
 * Waits until the file on disk holds exactly want.
 * @param {(p: string) => Promise<string>} read @param {string} file @param {string} want @param {string} what
 */
export async function diskIs(read, file, want, what) {
  return until(async () => (await read(file)) === want, { timeoutMs: STEP_MS, what });
}
