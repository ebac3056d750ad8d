package svchttp

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A service started with SIGHUP ignored (under nohup) starts programs
// that get SIGHUP's default action: a shell that hangs itself up dies,
// where it would have lived on with the ignored disposition inherited.
func TestKeepSIGHUPResetsChildren(t *testing.T) {
	if os.Getenv("SVCHTTP_HUP_CHILD") == "1" {
		keepSIGHUP()
		out, _ := exec.Command("sh", "-c", "kill -HUP $$; echo survived").CombinedOutput()
		os.Stdout.WriteString("child said: " + string(out) + "\n")
		return
	}
	if _, err := exec.LookPath("nohup"); err != nil {
		t.Skip("no nohup")
	}
	for _, keep := range []bool{true, false} {
		cmd := exec.Command("nohup", os.Args[0], "-test.run=^TestKeepSIGHUPResetsChildren$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SVCHTTP_HUP_CHILD=1")
		if !keep {
			// The control: the same without keepSIGHUP shows that nohup
			// does make the shell survive, so the test can fail.
			cmd = exec.Command("nohup", "sh", "-c", "kill -HUP $$; echo survived")
		}
		out, err := cmd.CombinedOutput()
		if err != nil && keep {
			t.Fatalf("%v: %s", err, out)
		}
		survived := strings.Contains(string(out), "survived")
		if keep && survived {
			t.Errorf("with keepSIGHUP the shell survived its SIGHUP: %s", out)
		}
		if !keep && !survived {
			t.Errorf("control: under nohup alone the shell did not survive: %s", out)
		}
	}
}
