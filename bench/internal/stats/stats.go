// Package stats turns recorded latencies into the figures the benchmarks
// report: throughput, nearest-rank percentiles, and the median across
// repeated runs.
package stats

import (
	"math"
	"slices"
	"time"
)

// Summary is one measured run.
type Summary struct {
	Count      int
	Throughput float64 // operations per second
	P50, P99   time.Duration
}

// Summarize computes a run's figures from its latencies and the length of
// the measured window. lat is not modified.
func Summarize(lat []time.Duration, window time.Duration) Summary {
	sorted := slices.Clone(lat)
	slices.Sort(sorted)
	s := Summary{Count: len(sorted), P50: Percentile(sorted, 50), P99: Percentile(sorted, 99)}
	if window > 0 {
		s.Throughput = float64(len(sorted)) / window.Seconds()
	}
	return s
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 100) of sorted
// latencies: the smallest value with at least p% of the values at or below
// it. It is 0 for no values, and the minimum for p ≤ 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

// Median is the middle value, or the mean of the two middle values when
// there is an even number of them; 0 for none. xs is not modified.
func Median[T ~int64 | ~float64](xs []T) T {
	n := len(xs)
	if n == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MedianSummary is the figure-by-figure median of several runs (each
// figure independently, so it need not be any one run's summary).
func MedianSummary(runs []Summary) Summary {
	var (
		counts = make([]int64, len(runs))
		tputs  = make([]float64, len(runs))
		p50s   = make([]time.Duration, len(runs))
		p99s   = make([]time.Duration, len(runs))
	)
	for i, r := range runs {
		counts[i], tputs[i], p50s[i], p99s[i] = int64(r.Count), r.Throughput, r.P50, r.P99
	}
	return Summary{
		Count:      int(Median(counts)),
		Throughput: Median(tputs),
		P50:        Median(p50s),
		P99:        Median(p99s),
	}
}
