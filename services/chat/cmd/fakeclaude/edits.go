package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// EDIT_THREE [n] [after=<path>]: a turn that changes the working directory
// for real, as the journal's tests need: two Write tool calls that write
// edit-a.txt and edit-b.txt, then a Bash tool call whose command (run by sh
// in the working directory) writes edit-c.txt; each file holds "<name>
// version <n>" (n defaults to 1). The tools run without a permission ask, as
// in bypassPermissions mode, whatever the session's mode.
//
// With after=<path>, nothing is written until that file exists (checked
// every 20 ms, for at most a minute; then the turn ends with an error text
// and writes nothing): the journal snapshots the tree when it takes the
// turn's start from the stream, and a fake agent is faster than that, so a
// test opens the gate once the journal holds the turn's start.
//
// The script lives here, apart from scripts.go, and registers itself.
func init() { scripts["EDIT_THREE"] = (*turn).editThree }

// editThreeFiles are the files EDIT_THREE writes: two by Write, the last by Bash.
var editThreeFiles = [3]string{"edit-a.txt", "edit-b.txt", "edit-c.txt"}

// editThreeContent is what EDIT_THREE n writes into name.
func editThreeContent(name string, n int) string {
	return fmt.Sprintf("%s version %d\n", name, n)
}

func (t *turn) editThree(n int) {
	if n <= 0 {
		n = 1
	}
	f := t.f
	f.out.json(f.systemInit())
	c := f.newCall()
	f.out.json(f.assistant(c, textBlock("I will edit two files and write a third with a command.")))
	if gate := afterGate(t.in.text); gate != "" && !waitForFile(gate, gateWait) {
		t.finish("Gave up: " + gate + " did not appear within " + gateWait.String() + "; nothing was written.")
		return
	}
	for _, name := range editThreeFiles[:2] {
		p := filepath.Join(f.cwd, name)
		content := editThreeContent(name, n)
		err := os.WriteFile(p, []byte(content), 0o644) //nolint:gosec // a project file, readable as the real agent writes it
		t.playTool(c, "Write", map[string]any{"file_path": p, "content": content}, err,
			"The file "+p+" has been updated.",
			map[string]any{"type": "update", "filePath": p, "content": content, "structuredPatch": []any{}, "originalFile": nil, "userModified": false})
	}
	name := editThreeFiles[2]
	cmd := fmt.Sprintf("printf '%%s\\n' '%s' > %s", strings.TrimSuffix(editThreeContent(name, n), "\n"), name)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sh := exec.CommandContext(ctx, "sh", "-c", cmd)
	sh.Dir = f.cwd
	out, err := sh.CombinedOutput()
	t.playTool(c, "Bash", map[string]any{"command": cmd, "description": "Write " + name}, err, string(out),
		map[string]any{"stdout": string(out), "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": true})
	t.finish(fmt.Sprintf("Edited %s and %s; the command wrote %s.", editThreeFiles[0], editThreeFiles[1], name))
}

// playTool sends one tool call that already ran: its tool_use and its
// tool_result (an error result when err is not nil).
func (t *turn) playTool(c call, name string, input map[string]any, err error, content string, result any) {
	f := t.f
	id := "toolu_" + randomHex(20)
	f.out.json(f.assistant(c, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}))
	block := map[string]any{"tool_use_id": id, "type": "tool_result", "content": content, "is_error": false}
	if err != nil {
		block["content"], block["is_error"], result = err.Error(), true, "Error: "+err.Error()
	}
	f.out.json(f.user([]any{block}, map[string]any{
		"tool_use_result":  result,
		"tool_result_meta": []any{map[string]any{"id": id, "permission_decision": map[string]any{"decision": "accept", "source": "config", "reason_type": "mode"}}},
	}))
}

// gateWait bounds EDIT_THREE's wait for its after= file.
const gateWait = time.Minute

// afterGate is the path of an after=<path> word of the prompt, or "".
func afterGate(prompt string) string {
	for _, w := range strings.Fields(prompt) {
		if p, ok := strings.CutPrefix(w, "after="); ok {
			return p
		}
	}
	return ""
}

// waitForFile reports whether path exists within d, looking every 20 ms.
func waitForFile(path string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
