//go:build race

package e2e

// raceEnabled: this test binary runs under the race detector, so the services
// are built with it too; make test has then compiled their packages already.
const raceEnabled = true
