package agent

import (
	"os"

	"github.com/svc-code/svc-code/libs/svcenv"
)

// ServerEnv is the server's environment without its own credentials
// (svcenv.ServerOnly): the base environment of an agent process. An agent
// runs shell commands that a prompt, or a file it reads, can steer.
func ServerEnv() []string { return svcenv.WithoutServerOnly(os.Environ()) }
