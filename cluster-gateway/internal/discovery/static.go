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

// maxNameLen bounds an endpoint's name (a DNS name's length).
const maxNameLen = 253

// ValidateName checks that an endpoint's name is 1 to 253 letters, digits, '.', '_' or '-': it
// is sent as the x-switchyard-endpoint response header, so it must be safe there (Kubernetes pod
// names are).
func ValidateName(name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("discovery: endpoint name %q: want 1 to %d characters", name, maxNameLen)
	}
	for _, c := range []byte(name) {
		if !nameByte(c) {
			return fmt.Errorf("discovery: endpoint name %q: only letters, digits, '.', '_' and '-' are allowed", name)
		}
	}
	return nil
}

// nameByte reports whether c may appear in an endpoint's name.
func nameByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return c == '.' || c == '_' || c == '-'
}

// ParseEndpoint parses one static endpoint, "host:port" or "name=host:port", into its name
// ("" when none is given) and address.
func ParseEndpoint(item string) (name, addr string, err error) {
	addr = item
	if n, a, ok := strings.Cut(item, "="); ok {
		name, addr = strings.TrimSpace(n), strings.TrimSpace(a)
		if err := ValidateName(name); err != nil {
			return "", "", err
		}
	}
	if err := ValidateAddress(addr); err != nil {
		return "", "", err
	}
	return name, addr, nil
}

// ValidateEngine checks that e is empty (vLLM) or a supported engine.
func ValidateEngine(e datastore.Engine) error {
	switch e {
	case "", datastore.EngineVLLM, datastore.EngineSGLang, datastore.EngineTRTLLM:
		return nil
	}
	return fmt.Errorf("discovery: unknown engine %q (want vllm, sglang or trtllm)", e)
}

// ParseList parses a comma-separated list of "host:port" or "name=host:port" items into vLLM
// endpoint specs (an item without a name is named datastore.OpaqueName of its address). Blanks
// around items are ignored; an empty list, a bad address or name, or a repeated address or name
// is an error.
func ParseList(list string) ([]datastore.EndpointSpec, error) {
	var specs []datastore.EndpointSpec
	seen := make(map[string]bool)
	names := make(map[string]bool)
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, err := ParseEndpoint(item)
		if err != nil {
			return nil, err
		}
		if seen[addr] {
			return nil, fmt.Errorf("discovery: endpoint %q listed twice", addr)
		}
		if name != "" && names[name] {
			return nil, fmt.Errorf("discovery: endpoint name %q given twice", name)
		}
		seen[addr], names[name] = true, true
		specs = append(specs, datastore.EndpointSpec{Address: addr, Name: name, Engine: datastore.EngineVLLM})
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
