package forward

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HeaderServerTiming carries the gateway's own time for a request (W3C Server Timing): the
// cluster gateway answers every request with a metric named GatewayTimingMetric whose dur is the
// milliseconds from the request's arrival to its response headers. What the router waited for
// the headers beyond that is network: the round trip the cluster table learns from.
const (
	HeaderServerTiming  = "Server-Timing"
	GatewayTimingMetric = "gateway"
)

// maxServerTiming bounds a believable gateway time (a queued request may legitimately wait
// minutes, never days); larger or malformed values are ignored.
const maxServerTiming = 24 * time.Hour

// GatewayTime returns the dur of the last metric named GatewayTimingMetric in h's Server-Timing
// values, and whether there was a valid one. The header comes from the network: anything that
// does not parse is ignored, never an error.
func GatewayTime(h http.Header) (time.Duration, bool) {
	var (
		out   time.Duration
		found bool
	)
	for _, v := range h.Values(HeaderServerTiming) {
		for v != "" {
			var metric string
			metric, v = nextMetric(v)
			if d, ok := metricDur(metric, GatewayTimingMetric); ok {
				out, found = d, true
			}
		}
	}
	return out, found
}

// nextMetric splits the first metric off a Server-Timing list (metrics are separated by commas
// outside quoted strings).
func nextMetric(v string) (metric, rest string) {
	quoted := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return v[:i], v[i+1:]
		}
	}
	return v, ""
}

// metricDur returns the dur parameter of metric when the metric is named name.
func metricDur(metric, name string) (time.Duration, bool) {
	params := strings.Split(metric, ";")
	if !strings.EqualFold(strings.TrimSpace(params[0]), name) {
		return 0, false
	}
	for _, p := range params[1:] {
		k, val, ok := strings.Cut(p, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "dur") {
			continue
		}
		ms, err := strconv.ParseFloat(strings.Trim(strings.TrimSpace(val), `"`), 64)
		if err != nil || ms < 0 || math.IsNaN(ms) || ms > float64(maxServerTiming/time.Millisecond) {
			return 0, false
		}
		return time.Duration(ms * float64(time.Millisecond)), true
	}
	return 0, false
}

// networkTime is the part of ttfb the gateway did not account for in its Server-Timing: the
// round trip (plus the time the request body took to arrive). 0 when the gateway reported no
// time.
func networkTime(ttfb time.Duration, h http.Header) time.Duration {
	gw, ok := GatewayTime(h)
	if !ok {
		return 0
	}
	// A clock step or rounding can make the difference negative; count it as no time at all
	// rather than drop it, so a near-zero path still registers as near.
	return max(ttfb-gw, time.Microsecond)
}
