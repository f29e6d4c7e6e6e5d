package bbr

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/apierror"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

// EndpointSource lists the current endpoints. The datastore's Store satisfies it. Implementations
// must be safe for concurrent use and must not let callers modify the returned slice.
type EndpointSource interface {
	Endpoints() []*datastore.Endpoint
}

// Resolution is a model name resolved against what the endpoints serve.
type Resolution struct {
	// BaseModel is the base model the request runs on.
	BaseModel string
	// Adapter is the LoRA adapter, or "" when the model is a base model.
	Adapter string
}

// resolve maps model to its base model. A model is served when an endpoint with known models
// serves it as its base, lists it as an adapter (in /v1/models or in its LoRA metrics), or when
// the adapter map names a base model some endpoint serves. ok is false when nothing serves it.
func resolve(eps []*datastore.Endpoint, adapters map[string]string, model string) (Resolution, bool) {
	mappedBase, mapped := adapters[model]
	for _, ep := range eps {
		ms := ep.Models()
		if ms == nil {
			continue
		}
		if ms.Base == model {
			return Resolution{BaseModel: model}, true
		}
		if ms.Serves(model) || hasLoRA(ep, model) {
			return Resolution{BaseModel: ms.Base, Adapter: model}, true
		}
	}
	if !mapped {
		return Resolution{}, false
	}
	for _, ep := range eps {
		if ms := ep.Models(); ms != nil && ms.Base == mappedBase {
			return Resolution{BaseModel: mappedBase, Adapter: model}, true
		}
	}
	return Resolution{}, false
}

// notServed is the error for a model resolve found no endpoint for: 404 model_not_found, unless
// there are endpoints but none's model list has been read yet (a gateway just started, or its
// pods just came up). Then the gateway cannot tell a model that does not exist from one its pods
// will list in a moment, and answers 503 with Retry-After, which a router or client retries,
// rather than telling the client that a model it serves does not exist.
func notServed(eps []*datastore.Endpoint, model string) error {
	if len(eps) == 0 || slices.ContainsFunc(eps, func(ep *datastore.Endpoint) bool { return ep.Models() != nil }) {
		return apierror.ModelNotFound(model)
	}
	return apierror.Unavailable("no model server's model list has been read yet", 1)
}

func hasLoRA(ep *datastore.Endpoint, model string) bool {
	m := ep.Metrics()
	return m != nil && m.HasAdapter(model)
}

// ParseAdapterMap reads the --adapter-map flag value: either a list "adapter=base,..." or the
// path of a YAML file mapping adapter names to base models. An empty value yields an empty map.
func ParseAdapterMap(v string) (map[string]string, error) {
	v = strings.TrimSpace(v)
	out := map[string]string{}
	if v == "" {
		return out, nil
	}
	if !strings.Contains(v, "=") {
		return readAdapterFile(v)
	}
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		a, b, ok := strings.Cut(pair, "=")
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		if !ok || a == "" || b == "" {
			return nil, fmt.Errorf("adapter map: entry %q is not adapter=base", pair)
		}
		out[a] = b
	}
	return out, nil
}

func readAdapterFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("adapter map: %w", err)
	}
	out := map[string]string{}
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("adapter map %s: %w", path, err)
	}
	for a, b := range out {
		if a == "" || b == "" {
			return nil, fmt.Errorf("adapter map %s: empty adapter or base name", path)
		}
	}
	return out, nil
}
