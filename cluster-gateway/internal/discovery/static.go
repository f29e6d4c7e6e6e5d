// Package discovery finds the model-server endpoints and keeps the datastore's endpoint set
// current. Three sources exist, each a component with Run(ctx) error: Static (a fixed list from
// --endpoints), File (a YAML file from --endpoints-file, watched and reloaded) and Pool (a
// Kubernetes InferencePool and its ready pods, watched with informers).
package discovery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

// Syncer receives the complete endpoint set each time it changes; *datastore.Store implements it.
// Implementations must be safe for concurrent use.
type Syncer interface {
	Sync(specs []datastore.EndpointSpec)
}

// ValidateAddress checks that addr is "host:port" with a non-empty UTF-8 host and a port in
// 1..65535. (The address is a label value of the per-endpoint metrics, which must be UTF-8.)
func ValidateAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("discovery: endpoint %q: want host:port: %w", addr, err)
	}
	if host == "" || strings.ContainsAny(host, "/ ") || !utf8.ValidString(host) {
		return fmt.Errorf("discovery: endpoint %q: bad host", addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("discovery: endpoint %q: port must be 1..65535", addr)
	}
	return nil
}

// ValidateEngine checks that e is empty (vLLM) or a supported engine.
func ValidateEngine(e datastore.Engine) error {
	switch e {
	case "", datastore.EngineVLLM, datastore.EngineSGLang, datastore.EngineTRTLLM:
		return nil
	}
	return fmt.Errorf("discovery: unknown engine %q (want vllm, sglang or trtllm)", e)
}

// ParseList parses a comma-separated "host:port,host:port" list into vLLM endpoint specs.
// Blanks around items are ignored; an empty list, a bad address or a repeated one is an error.
func ParseList(list string) ([]datastore.EndpointSpec, error) {
	var specs []datastore.EndpointSpec
	seen := make(map[string]bool)
	for item := range strings.SplitSeq(list, ",") {
		addr := strings.TrimSpace(item)
		if addr == "" {
			continue
		}
		if err := ValidateAddress(addr); err != nil {
			return nil, err
		}
		if seen[addr] {
			return nil, fmt.Errorf("discovery: endpoint %q listed twice", addr)
		}
		seen[addr] = true
		specs = append(specs, datastore.EndpointSpec{Address: addr, Engine: datastore.EngineVLLM})
	}
	if len(specs) == 0 {
		return nil, errors.New("discovery: empty endpoint list")
	}
	return specs, nil
}

// Static publishes a fixed endpoint set once.
type Static struct {
	specs []datastore.EndpointSpec
	dst   Syncer
}

// NewStatic parses list (see ParseList) and returns a source that publishes it to dst.
func NewStatic(list string, dst Syncer) (*Static, error) {
	specs, err := ParseList(list)
	if err != nil {
		return nil, err
	}
	return &Static{specs: specs, dst: dst}, nil
}

// Run publishes the set and waits for ctx to end; it returns nil.
func (s *Static) Run(ctx context.Context) error {
	s.dst.Sync(s.specs)
	<-ctx.Done()
	return nil
}
