// Command shadow serves svc-code's shadow backend: the per-project shadow
// git journal, files, search and the helpers. It listens on SHADOW_ADDR and
// answers only requests that carry the internal credential, i.e. that come
// through the gateway. With -healthcheck it instead asks the running shadow
// for its health and exits 0 if healthy, 1 if not (for container
// healthchecks).
package main

import (
	"github.com/svc-code/svc-code/libs/svcenv"
	"github.com/svc-code/svc-code/libs/svchttp"
	"github.com/svc-code/svc-code/services/shadow/internal/app"
)

func main() {
	svchttp.Binary[app.Config]{
		Service: app.Service,
		Load:    app.LoadConfig,
		Run:     app.Run,
		Target:  func(c app.Config) (svcenv.Common, string) { return c.Common, c.Addr },
	}.Main()
}
