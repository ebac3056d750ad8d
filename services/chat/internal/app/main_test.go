package app

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// fasthttp refreshes its Date header from one goroutine that it
		// starts once per process and never stops.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		// Each Serve's worker-pool cleaner sleeps MaxIdleWorkerDuration (10 s)
		// between looks at its stop channel, so it outlives a shutdown by
		// up to that long, then exits.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
	)
}
