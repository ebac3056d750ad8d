package stats

import (
	"testing"
	"time"
)

func ms(vs ...float64) []time.Duration {
	out := make([]time.Duration, len(vs))
	for i, v := range vs {
		out[i] = time.Duration(v * float64(time.Millisecond))
	}
	return out
}

// series returns 1 ms, 2 ms, ..., n ms.
func series(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single p50", ms(7), 50, 7 * time.Millisecond},
		{"single p99", ms(7), 99, 7 * time.Millisecond},
		{"two p50 is the lower", ms(1, 2), 50, 1 * time.Millisecond},
		{"two p99 is the upper", ms(1, 2), 99, 2 * time.Millisecond},
		{"ten p50", series(10), 50, 5 * time.Millisecond},
		{"ten p99 is the max", series(10), 99, 10 * time.Millisecond},
		{"hundred p50", series(100), 50, 50 * time.Millisecond},
		{"hundred p99", series(100), 99, 99 * time.Millisecond},
		{"thousand p99", series(1000), 99, 990 * time.Millisecond},
		{"1001 p99 rounds up", series(1001), 99, 991 * time.Millisecond},
		{"p100 is the max", series(10), 100, 10 * time.Millisecond},
		{"p0 is the min", series(10), 0, 1 * time.Millisecond},
		{"one slow outlier in a hundred is above p99", append(ms(make([]float64, 99)...), time.Second), 99, 0},
		{"two slow outliers in a hundred reach p99", append(ms(make([]float64, 98)...), time.Second, time.Second), 99, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%d values, %v) = %v, want %v", len(tt.sorted), tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name   string
		lat    []time.Duration
		window time.Duration
		want   Summary
	}{
		{"empty", nil, time.Second, Summary{}},
		{"zero window has no throughput", ms(1, 2), 0, Summary{Count: 2, P50: time.Millisecond, P99: 2 * time.Millisecond}},
		{"unsorted input", ms(3, 1, 2, 5, 4), 2 * time.Second, Summary{Count: 5, Throughput: 2.5, P50: 3 * time.Millisecond, P99: 5 * time.Millisecond}},
		{"hundred in half a second", series(100), 500 * time.Millisecond, Summary{Count: 100, Throughput: 200, P50: 50 * time.Millisecond, P99: 99 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(tt.lat, tt.window)
			if got != tt.want {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSummarizeKeepsInput(t *testing.T) {
	lat := ms(3, 1, 2)
	Summarize(lat, time.Second)
	if got, want := lat, ms(3, 1, 2); got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("Summarize reordered its input: got %v, want %v", got, want)
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"one", []float64{4}, 4},
		{"odd unsorted", []float64{9, 1, 5}, 5},
		{"even is the mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
		{"outlier does not move it", []float64{10, 11, 1000}, 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Median(tt.xs); got != tt.want {
				t.Errorf("Median(%v) = %v, want %v", tt.xs, got, tt.want)
			}
		})
	}
}

func TestMedianSummary(t *testing.T) {
	runs := []Summary{
		{Count: 10, Throughput: 100, P50: 3 * time.Millisecond, P99: 9 * time.Millisecond},
		{Count: 30, Throughput: 300, P50: 1 * time.Millisecond, P99: 7 * time.Millisecond},
		{Count: 20, Throughput: 200, P50: 2 * time.Millisecond, P99: 8 * time.Millisecond},
	}
	want := Summary{Count: 20, Throughput: 200, P50: 2 * time.Millisecond, P99: 8 * time.Millisecond}
	if got := MedianSummary(runs); got != want {
		t.Errorf("MedianSummary = %+v, want %+v", got, want)
	}
}
