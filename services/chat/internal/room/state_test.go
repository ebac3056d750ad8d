package room

import "testing"

func TestStateValue(t *testing.T) {
	for _, c := range []struct {
		running, compacting bool
		want                string
	}{
		{false, false, "0 0"}, {true, false, "1 0"}, {false, true, "0 1"}, {true, true, "1 1"},
	} {
		got := stateValue(c.running, c.compacting)
		if got != c.want {
			t.Errorf("stateValue(%t, %t) = %q, want %q", c.running, c.compacting, got, c.want)
		}
		if r, k := parseState(got); r != c.running || k != c.compacting {
			t.Errorf("parseState(%q) = %t, %t, want %t, %t", got, r, k, c.running, c.compacting)
		}
	}
	for _, bad := range []string{"", "1", "1 1 1", "yes no"} {
		if r, k := parseState(bad); r || k {
			t.Errorf("parseState(%q) = %t, %t, want false, false", bad, r, k)
		}
	}
}
