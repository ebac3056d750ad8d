//go:build !race

package vtscreen

const raceScale = 1
