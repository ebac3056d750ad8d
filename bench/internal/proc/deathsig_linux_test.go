package proc

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A Group child outlives nothing: when the benchmark dies without
// stopping it, it gets SIGTERM. The test runs itself as the benchmark,
// which starts a Group child and exits at once.
func TestGroupChildEndsWithTheBenchmark(t *testing.T) {
	if os.Getenv("PROC_DEATHSIG_PARENT") == "1" {
		p, err := Start(context.Background(), Config{Name: "sleeper", Path: "sleep", Args: []string{"300"}, Group: true, StopTimeout: time.Second})
		if err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		fmt.Println("child", p.Pid())
		os.Exit(0) // no Stop
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGroupChildEndsWithTheBenchmark$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PROC_DEATHSIG_PARENT=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("parent: %v: %s", err, out)
	}
	var pid int
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "child "); ok {
			pid, _ = strconv.Atoi(v)
		}
	}
	if pid <= 0 {
		t.Fatalf("the parent named no child: %s", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
			t.Fatalf("child %d still runs 10 s after the benchmark died", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie, dead but not reaped, does
// not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}
