// Command terminal serves svc-code's terminal backend: PTYs with their
// scrollback, /api/terminals and /api/exec. It listens on TERMINAL_ADDR and
// answers only requests that carry the internal credential, i.e. that come
// through the gateway. With -healthcheck it instead asks the running
// terminal for its health and exits 0 if healthy, 1 if not (for container
// healthchecks).
package main

import (
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/terminal/internal/app"
)

func main() {
	svchttp.Binary[app.Config]{
		Service: app.Service,
		Load:    app.LoadConfig,
		Run:     app.Run,
		Target:  func(c app.Config) (svcenv.Common, string) { return c.Common, c.Addr },
	}.Main()
}
