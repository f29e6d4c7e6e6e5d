package scrape

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

// Error kinds, the "kind" label of switchyard_gateway_scrape_errors_total.
const (
	kindMetrics = "metrics"
	kindModels  = "models"
)

// scrapeMetrics are the scraper's gateway metrics.
type scrapeMetrics struct {
	errors   *prometheus.CounterVec
	duration prometheus.Histogram
	interval prometheus.Gauge
}

func newScrapeMetrics(src Source, reg prometheus.Registerer) *scrapeMetrics {
	m := &scrapeMetrics{
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "switchyard_gateway_scrape_errors_total",
			Help: "Failed scrapes of model-server endpoints, by endpoint and kind (metrics or models).",
		}, []string{"endpoint", "kind"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "switchyard_gateway_scrape_duration_seconds",
			Help:    "Duration of successful /metrics scrapes, request to parsed result.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		interval: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "switchyard_gateway_scrape_interval_seconds",
			Help: "Current interval between two scrapes of one endpoint (grows with the endpoint count).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.errors, m.duration, m.interval, &ageCollector{src: src})
	}
	return m
}

// forget drops the per-endpoint series of a removed endpoint.
func (m *scrapeMetrics) forget(addr string) {
	m.errors.DeleteLabelValues(addr, kindMetrics)
	m.errors.DeleteLabelValues(addr, kindModels)
}

// ageCollector exports each endpoint's metrics age when scraped, so the hot path pays nothing.
type ageCollector struct{ src Source }

var ageDesc = prometheus.NewDesc("switchyard_gateway_endpoint_metrics_age_seconds",
	"Age of each endpoint's newest successful scrape (+Inf when none yet).", []string{"endpoint"}, nil)

// Describe implements prometheus.Collector.
func (c *ageCollector) Describe(ch chan<- *prometheus.Desc) { ch <- ageDesc }

// Collect implements prometheus.Collector.
func (c *ageCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for _, ep := range c.src.Endpoints() {
		ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, ageSeconds(ep, now), ep.Address)
	}
}

func ageSeconds(ep *datastore.Endpoint, now time.Time) float64 {
	age := ep.MetricsAge(now)
	if age == datastore.NoMetricsAge {
		return math.Inf(1)
	}
	return age.Seconds()
}
