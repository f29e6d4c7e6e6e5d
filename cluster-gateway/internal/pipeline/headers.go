package pipeline

import (
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
)

// EndpointHeaderValue is what x-switchyard-endpoint shows of ep, the endpoint that served a
// request, on either front door: its name, or its address when address is set (debugging: the
// address is internal to the cluster).
func EndpointHeaderValue(ep *datastore.Endpoint, address bool) string {
	if address {
		return ep.Address
	}
	return ep.Name
}

// PrefillEndpoint is the prefill pod of a prefill/decode decision res, or nil when res has none.
func PrefillEndpoint(res *framework.Result) *datastore.Endpoint {
	if res == nil || res.Prefill == nil || len(res.Prefill.Targets) == 0 {
		return nil
	}
	ep, _ := res.Prefill.Targets[0].(*datastore.Endpoint) // the scheduler picks among the store's
	return ep
}

// PrefillAddress is the host:port the decode pod of res is told to pull the prompt's KV cache
// from (x-prefiller-host-port), or "" when res has no prefill pod. Both front doors send it.
func PrefillAddress(res *framework.Result) string {
	if ep := PrefillEndpoint(res); ep != nil {
		return ep.Address
	}
	return ""
}
