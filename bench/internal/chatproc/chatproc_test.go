package chatproc

import (
	"strings"
	"testing"
)

func TestParseVMRSS(t *testing.T) {
	status := "Name:\tchat\nVmPeak:\t  900 kB\nVmRSS:\t   12345 kB\nThreads:\t9\n"
	got, err := parseVMRSS(strings.NewReader(status))
	if err != nil || got != 12345*1024 {
		t.Fatalf("got %d, %v; want %d", got, err, 12345*1024)
	}
	for _, bad := range []string{"Name:\tchat\n", "VmRSS:\t12 MB\n", "VmRSS:\tx kB\n"} {
		if _, err := parseVMRSS(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
