// Package tenantlimits enforces per-tenant limits at the gateway for clusters run without a
// router in front: the limits come from a YAML file (--tenant-limits-file, tenant → limits),
// re-read when it changes, and each request of a tenant is charged to them in the shared
// pipeline, so both front doors (the HTTP proxy and ext_proc) answer a tenant over a limit with
// the router's 429 rate_limit_exceeded and Retry-After. The limits are requests per second (a
// token bucket holding one second's worth), requests in flight, and input plus output tokens
// per minute over a sliding window (a reservation at admission, reconciled with the measured
// usage when the answer ends), counted by contract/ratelimit, as the router counts them.
package tenantlimits

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Limits are one tenant's limits; a zero field is no limit.
type Limits struct {
	// TokensPerMinute bounds input plus output tokens per minute.
	TokensPerMinute int64 `yaml:"tokens_per_minute"`
	// RequestsPerSecond bounds admissions per second.
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	// MaxConcurrent bounds requests in flight.
	MaxConcurrent int64 `yaml:"max_concurrent"`
}

// Bounds of a limits file, as the router bounds a stored tenant.
const (
	MaxTokensPerMinute   = 1_000_000_000_000
	MaxRequestsPerSecond = 1_000_000
	MaxConcurrent        = 1_000_000
	// MaxTenants bounds the tenants one file lists.
	MaxTenants = 10_000
	maxNameLen = 253
)

// Others is the file's entry for every request whose tenant the file does not list (or that
// names none): they share its limits, so naming an unlisted tenant does not escape limits.
const Others = "*"

// Table is a parsed limits file: each listed tenant's limits, and the shared limits of the
// others when the file has an Others entry.
type Table struct {
	tenants map[string]Limits
}

// Lookup returns the limits tenant is charged to and the name its counters are kept under:
// its own entry, else the Others entry (under Others), else none (ok false).
func (t *Table) Lookup(tenant string) (lim Limits, key string, ok bool) {
	if t == nil {
		return Limits{}, "", false
	}
	if l, found := t.tenants[tenant]; found && tenant != Others {
		return l, tenant, true
	}
	l, found := t.tenants[Others]
	return l, Others, found
}

// Len is the number of entries.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.tenants)
}

// Names returns the listed tenants, sorted (Others included when present).
func (t *Table) Names() []string {
	if t == nil {
		return nil
	}
	names := make([]string, 0, len(t.tenants))
	for n := range t.tenants {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Parse reads a limits file: a YAML mapping of tenant name to limits, e.g.
//
//	acme:
//	  requests_per_second: 20
//	  max_concurrent: 8
//	  tokens_per_minute: 200000
//	"*":                 # every other tenant, together
//	  requests_per_second: 5
//
// "{}" is a valid empty table, an empty file is not (most likely a file caught mid-write). A
// name is 1 to 253 letters, digits, '.', '_' or '-' (or "*"); unknown keys, a tenant listed
// twice, negative or out-of-range limits are errors naming the tenant and the line.
func Parse(raw []byte) (*Table, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("tenantlimits: file is empty (write {} for no tenants)")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("tenantlimits: parse: %w", err)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("tenantlimits: line %d: the file is a mapping of tenant name to limits", root.Line)
	}
	if len(root.Content)/2 > MaxTenants {
		return nil, fmt.Errorf("tenantlimits: %d tenants listed, at most %d", len(root.Content)/2, MaxTenants)
	}
	t := &Table{tenants: make(map[string]Limits, len(root.Content)/2)}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		name := k.Value
		if err := validName(name); err != nil {
			return nil, fmt.Errorf("tenantlimits: line %d: %w", k.Line, err)
		}
		if _, dup := t.tenants[name]; dup {
			return nil, fmt.Errorf("tenantlimits: line %d: tenant %q listed twice", k.Line, name)
		}
		lim, err := decodeLimits(v)
		if err != nil {
			return nil, fmt.Errorf("tenantlimits: line %d: tenant %q: %w", v.Line, name, err)
		}
		t.tenants[name] = lim
	}
	return t, nil
}

// decodeLimits decodes one tenant's limits, rejecting unknown keys and bad values.
func decodeLimits(n *yaml.Node) (Limits, error) {
	if n.Kind != yaml.MappingNode {
		return Limits{}, errors.New("limits are a mapping of tokens_per_minute, requests_per_second, max_concurrent")
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "tokens_per_minute", "max_concurrent":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" {
				return Limits{}, fmt.Errorf("line %d: %s must be a whole number, got %q", v.Line, k.Value, v.Value)
			}
		case "requests_per_second":
			if v.Kind != yaml.ScalarNode || (v.ShortTag() != "!!int" && v.ShortTag() != "!!float") {
				return Limits{}, fmt.Errorf("line %d: %s must be a number, got %q", v.Line, k.Value, v.Value)
			}
		default:
			return Limits{}, fmt.Errorf(
				"line %d: unknown key %q (want tokens_per_minute, requests_per_second, max_concurrent)",
				k.Line, k.Value)
		}
	}
	var l Limits
	if err := n.Decode(&l); err != nil {
		return Limits{}, err
	}
	return l, l.Validate()
}

// Validate reports the first limit out of range.
func (l Limits) Validate() error {
	switch {
	case l.TokensPerMinute < 0 || l.TokensPerMinute > MaxTokensPerMinute:
		return fmt.Errorf("tokens_per_minute %d is outside [0, %d]", l.TokensPerMinute, int64(MaxTokensPerMinute))
	case math.IsNaN(l.RequestsPerSecond) || l.RequestsPerSecond < 0 || l.RequestsPerSecond > MaxRequestsPerSecond:
		return fmt.Errorf("requests_per_second %v is outside [0, %d]", l.RequestsPerSecond, MaxRequestsPerSecond)
	case l.MaxConcurrent < 0 || l.MaxConcurrent > MaxConcurrent:
		return fmt.Errorf("max_concurrent %d is outside [0, %d]", l.MaxConcurrent, MaxConcurrent)
	}
	return nil
}

// validName checks a tenant name as the router checks one (or Others).
func validName(name string) error {
	if name == Others {
		return nil
	}
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("tenant name must be 1 to %d characters", maxNameLen)
	}
	if strings.IndexFunc(name, func(r rune) bool {
		return r != '.' && r != '_' && r != '-' && (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9')
	}) >= 0 {
		return fmt.Errorf("tenant name %q may only hold letters, digits, '.', '_' and '-' (or be \"*\")", name)
	}
	return nil
}
