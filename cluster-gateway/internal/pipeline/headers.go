package pipeline

import "github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"

// EndpointHeaderValue is what x-switchyard-endpoint shows of ep, the endpoint that served a
// request, on either front door: its name, or its address when address is set (debugging: the
// address is internal to the cluster).
func EndpointHeaderValue(ep *datastore.Endpoint, address bool) string {
	if address {
		return ep.Address
	}
	return ep.Name
}
