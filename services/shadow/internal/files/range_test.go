package files

import "testing"

// FuzzParseRange: a served range always lies inside the file.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"bytes=0-0", "bytes=-5", "bytes=5-", "bytes=9-3", "bytes=-0", "bytes=1-2,3-4", "bytes=99999999999999999999-"} {
		f.Add(s, int64(10))
	}
	f.Fuzz(func(t *testing.T, h string, size int64) {
		if size < 0 {
			size = -size
		}
		start, length, ok, err := parseRange(h, size)
		if err != nil || !ok {
			return
		}
		if start < 0 || length < 1 || start+length > size {
			t.Fatalf("parseRange(%q, %d) = %d, %d: outside the file", h, size, start, length)
		}
	})
}
