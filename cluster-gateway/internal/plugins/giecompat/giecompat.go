// Package giecompat registers how GIE v1.5.0 plugin types that Switchyard does not implement as
// scheduler plugins are treated when a GIE EndpointPickerConfig is loaded: bookkeeping types whose
// work the gateway does elsewhere are accepted and ignored with a warning; types whose behaviour
// cannot be honoured are rejected with an error naming the alternative.
package giecompat

import "github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"

// Ignored maps accepted-and-ignored GIE types to the reason logged when they are loaded.
var Ignored = map[string]string{
	"single-profile-handler": "a config with one scheduling profile runs it; no handler is needed",
	"prefill-header-handler": "the front doors set x-prefiller-host-port from the " +
		"pd-profile-handler's decision",
	"approx-prefix-cache-producer":         "prefix-cache-scorer maintains its own prefix index; set its parameters there",
	"inflight-load-producer":               "the gateway counts its in-flight requests per endpoint itself",
	"metrics-data-source":                  "the gateway scrapes model-server metrics itself",
	"core-metrics-extractor":               "the gateway parses vLLM, SGLang and TRT-LLM metrics itself",
	"k8s-notification-source":              "endpoints come from the gateway's discovery",
	"endpoint-notification-source":         "endpoints come from the gateway's discovery",
	"openai-parser":                        "the gateway's body-based routing parses OpenAI requests",
	"request-attribute-reporter":           "the gateway reports usage in its own metrics",
	"global-strict-fairness-policy":        "flow control is configured by the gateway's own flags",
	"round-robin-fairness-policy":          "flow control is configured by the gateway's own flags",
	"fcfs-ordering-policy":                 "flow control is configured by the gateway's own flags",
	"edf-ordering-policy":                  "flow control is configured by the gateway's own flags",
	"slo-deadline-ordering-policy":         "flow control is configured by the gateway's own flags",
	"static-usage-limit-policy":            "flow control is configured by the gateway's own flags",
	"eviction-sheddable-filter":            "flow control is configured by the gateway's own flags",
	"eviction-priority-then-time-ordering": "flow control is configured by the gateway's own flags",
}

// Unsupported maps GIE types that are rejected to the error's explanation.
var Unsupported = map[string]string{
	"predicted-latency-scorer": "it needs GIE's external latency-predictor sidecar; use predicted-ttft-scorer, " +
		"which learns per-pod speed in-process",
	"predicted-latency-producer":   "it needs GIE's external latency-predictor sidecar; use predicted-ttft-scorer",
	"latency-scorer":               "use predicted-ttft-scorer",
	"latency-slo-admitter":         "SLO admission is not implemented; use predicted-ttft-scorer with flow control",
	"slo-headroom-tier-filter":     "SLO tiers are not implemented; use predicted-ttft-scorer",
	"prefix-cache-affinity-filter": "use prefix-cache-scorer with a higher weight",
	"token-load-scorer":            "use predicted-ttft-scorer, which accounts for queued prompt tokens",
	"vllmgrpc-parser":              "the gateway serves the OpenAI HTTP API only",
	"passthrough-parser":           "the gateway needs the OpenAI body to route by model",
	"base-model-to-header":         "body-based routing sets X-Gateway-Base-Model-Name itself",
	"body-field-to-header":         "body-based routing is configured by the gateway's own flags",
}

func init() {
	for t, why := range Ignored {
		framework.DefaultRegistry.RegisterIgnored(t, why)
	}
	for t, why := range Unsupported {
		framework.DefaultRegistry.RegisterUnsupported(t, why)
	}
}
