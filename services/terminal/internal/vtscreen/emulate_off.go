//go:build noscreen

package vtscreen

// emulate is false in this build (the noscreen tag, for measuring what
// the server's screen costs): Write drops the output, and the screen
// stays blank. Never for a real build: clients that fall behind would be
// resynchronised with a blank screen.
const emulate = false
