package gossip

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestLabelValue(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "gw-east-a-0", "gw-east-a-0"},
		{"empty", "", otherLabel},
		{"invalid utf-8", "gw-\xff", otherLabel},
		{"at the limit", strings.Repeat("n", maxLabelLen), strings.Repeat("n", maxLabelLen)},
		{"over the limit", strings.Repeat("n", maxLabelLen+1), otherLabel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := labelValue(tc.in); got != tc.want {
				t.Errorf("labelValue(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestSummaryAgeLabelsBounded feeds the age gauge more publishers than it may have series, some
// with names that are not UTF-8 (which WithLabelValues would panic on): the gauge keeps at most
// maxAgeSeries+1 series and "other" carries the oldest age among the rest.
func TestSummaryAgeLabelsBounded(t *testing.T) {
	var in []ageSample
	for i := range 3 * maxAgeSeries {
		in = append(in, ageSample{node: fmt.Sprintf("gw-%05d", i), cluster: fmt.Sprint("c-", i%7), age: float64(i % 10)})
	}
	in = append(
		in,
		ageSample{node: "gw-\xff", cluster: "c", age: 42},
		ageSample{node: "gw-ok", cluster: "bad\xfe", age: 1},
	)
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "age"}, []string{"node", "cluster"})
	for _, s := range boundAges(in) {
		g.WithLabelValues(s.node, s.cluster).Set(s.age)
	}
	if n := testutil.CollectAndCount(g); n != maxAgeSeries+1 {
		t.Errorf("%d series for %d publishers, want %d", n, len(in), maxAgeSeries+1)
	}
	if v := testutil.ToFloat64(g.WithLabelValues(otherLabel, otherLabel)); v != 42 {
		t.Errorf("other = %v, want the oldest folded age 42", v)
	}
	if v := testutil.ToFloat64(g.WithLabelValues("gw-00003", "c-3")); v != 3 {
		t.Errorf("gw-00003 = %v, want its own age 3", v)
	}
}
