// Package scrape reads model-server metrics into the datastore. A Scraper runs one loop per
// endpoint that fetches the pod's Prometheus /metrics page (vLLM, SGLang or TensorRT-LLM names,
// see families.go) at a short interval over one reused keep-alive connection, parses only the
// families the scheduler needs with a streaming parser, and stores the result on the endpoint.
// Families replaces some signals' families on every pod, with GIE's metric-spec syntax
// ("name{label=value}", ParseMetricSpec), and the metrics page's port, path and scheme are
// configurable, as GIE's endpoint picker's flags make them.
// The same loop refreshes the pod's /v1/models list. A pod whose scrape fails or whose metrics
// grow old is reported stale by the datastore, and the scheduler treats it as saturated.
package scrape
