//go:build race

package vtscreen

// raceScale shrinks the randomized tests under the race detector (which
// slows the library tenfold); their full size runs without it.
const raceScale = 8
