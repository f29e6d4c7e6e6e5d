package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/pipeline"
	"github.com/switchyard-dev/switchyard/contract"
)

// hopHeaders are connection-level headers that are never forwarded (RFC 9110 section 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// upstreamHeader builds the header sent to the model server from the client's: with a prefill
// pod (prefill, its host:port; "" for none), x-prefiller-host-port (a client's value, like every
// routing header, is dropped).
func upstreamHeader(in http.Header, d *pipeline.Decision, prefill string) http.Header {
	out := make(http.Header, len(in)+2)
	for k, v := range in {
		if contract.IsRouting(k) || k == "Content-Length" {
			continue
		}
		out[k] = v
	}
	removeHop(out, in)
	out.Set(contract.HeaderModelName, d.Request.Model)
	out.Set(contract.HeaderBaseModelName, d.Request.BaseModel)
	if prefill != "" {
		out.Set(contract.HeaderPrefillerHostPort, prefill)
	}
	return out
}

// removeHop deletes hop-by-hop headers, including those named in the Connection header of src.
func removeHop(h, src http.Header) {
	for _, f := range src.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			h.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range hopHeaders {
		delete(h, k) // already canonical
	}
}

// copyResponseHeader copies the model server's response headers to the client's. Content-Length
// is kept: the body passes through unchanged.
func copyResponseHeader(dst, src http.Header) {
	for k, v := range src {
		if contract.IsRouting(k) {
			continue
		}
		dst[k] = v
	}
	removeHop(dst, src)
}

// setServedBy sets the cluster, region and (optionally) endpoint response headers.
func (s *Server) setServedBy(h http.Header, ep *datastore.Endpoint) {
	if s.cfg.Cluster != "" {
		h.Set(contract.HeaderCluster, s.cfg.Cluster)
	}
	if s.cfg.Region != "" {
		h.Set(contract.HeaderRegion, s.cfg.Region)
	}
	if ep != nil && s.cfg.EndpointHeader {
		h.Set(contract.HeaderEndpoint, pipeline.EndpointHeaderValue(ep, s.cfg.EndpointHeaderAddress))
	}
}

// setPD sets the prefill/decode decision's response headers of res (none without a pd profile).
func (s *Server) setPD(h http.Header, res *framework.Result, fellBack bool) {
	if res == nil || res.Disaggregation == "" {
		return
	}
	if fellBack && res.Prefill != nil {
		h.Set(contract.HeaderPD, PDPrefillFailed)
		return
	}
	h.Set(contract.HeaderPD, res.Disaggregation)
	if ep := pipeline.PrefillEndpoint(res); ep != nil && s.cfg.EndpointHeader {
		h.Set(contract.HeaderPrefillEndpoint, pipeline.EndpointHeaderValue(ep, s.cfg.EndpointHeaderAddress))
	}
}

// headerGetter returns a lookup of h by lower-case name.
func headerGetter(h http.Header) func(string) string {
	return func(name string) string {
		if v := h[canonicalName(name)]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
}

// canonicalNames caches the canonical form of the lower-case names the decision looks up
// (a handful of constants): http.Header.Get allocates the canonical form of every such name
// on every call.
var canonicalNames sync.Map // lower-case name → canonical name

// canonicalName returns http.CanonicalHeaderKey(name), cached.
func canonicalName(name string) string {
	if c, ok := canonicalNames.Load(name); ok {
		return c.(string)
	}
	c := http.CanonicalHeaderKey(name)
	canonicalNames.Store(name, c)
	return c
}

type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// ModelList renders models as OpenAI's GET /v1/models answer.
func ModelList(models []string) []byte {
	list := struct {
		Object string       `json:"object"`
		Data   []modelEntry `json:"data"`
	}{Object: "list", Data: make([]modelEntry, 0, len(models))}
	for _, m := range models {
		list.Data = append(list.Data, modelEntry{ID: m, Object: "model", OwnedBy: "switchyard"})
	}
	b, _ := json.Marshal(list) // cannot fail: strings only
	return b
}
