package profile

import (
	"strings"
	"testing"
)

func TestName(t *testing.T) {
	tests := []struct {
		value   string
		want    string
		wantErr bool
	}{
		{"", "", false},
		{"work", "work", false},
		{"a.b_c-9", "a.b_c-9", false},
		{".", "", true},
		{"..", "", true},
		{"a/b", "", true},
		{"../x", "", true},
		{"a:b", "", true},
		{"a b", "", true},
		{"é", "", true},
		{strings.Repeat("x", 65), "", true},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			got, err := Name(func(k string) string {
				if k == EnvVar {
					return tt.value
				}
				return ""
			})
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("Name(%q) = %q, %v; want %q, error %v", tt.value, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// No profile's prefix may be the start of another's, or of the default's:
// a SCAN over one would then list the other's keys.
func TestRedisPrefixesAreDisjoint(t *testing.T) {
	names := []string{"", "a", "ab", "auth", "terminal", "a.b", "a-b", "svc"}
	for _, a := range names {
		for _, b := range names {
			if a == b {
				continue
			}
			pa, pb := RedisPrefix(a), RedisPrefix(b)
			if strings.HasPrefix(pb, pa) {
				t.Errorf("prefix of %q (%q) is the start of %q's (%q)", a, pa, b, pb)
			}
		}
	}
	if got := RedisPrefix(""); got != "svc:" {
		t.Errorf("default prefix = %q, want svc:", got)
	}
	if got := RedisPrefix("work"); got != "svc-work:" {
		t.Errorf("RedisPrefix(work) = %q, want svc-work:", got)
	}
}
