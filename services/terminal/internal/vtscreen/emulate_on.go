//go:build !noscreen

package vtscreen

// emulate is false only in a build with the noscreen tag (for measuring
// what the server's screen costs: `GOFLAGS=-tags=noscreen`).
const emulate = true
