package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Registry maps plugin type names to factories. Plugin packages register themselves in init
// with Register; the config loader builds plugins by type through Lookup. It is safe for
// concurrent use.
type Registry struct {
	mu        sync.RWMutex
	factories map[string]Factory
	ignored   map[string]string // GIE types accepted for compatibility: type -> why ignored
	rejected  map[string]string // GIE types known but not supported: type -> why
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		factories: make(map[string]Factory),
		ignored:   make(map[string]string),
		rejected:  make(map[string]string),
	}
}

// DefaultRegistry is the process-wide registry the built-in plugins register into.
var DefaultRegistry = NewRegistry()

// Register adds typ to DefaultRegistry. It panics when typ is empty or already registered: two
// plugins claiming one name is a programming error.
func Register(typ string, f Factory) { DefaultRegistry.Register(typ, f) }

// Register adds a factory for typ; it panics on an empty type, a nil factory or a duplicate.
func (r *Registry) Register(typ string, f Factory) {
	if typ == "" || f == nil {
		panic("framework: Register with empty type or nil factory")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.taken(typ) {
		panic(fmt.Sprintf("framework: plugin type %q registered twice", typ))
	}
	r.factories[typ] = f
}

// RegisterIgnored records a GIE plugin type that Switchyard accepts in a config file but does not
// need (bookkeeping the gateway does elsewhere). Loading it logs a warning with reason.
func (r *Registry) RegisterIgnored(typ, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.taken(typ) {
		panic(fmt.Sprintf("framework: plugin type %q registered twice", typ))
	}
	r.ignored[typ] = reason
}

// RegisterUnsupported records a GIE plugin type that Switchyard cannot honour; loading it fails
// with reason, which should name the alternative.
func (r *Registry) RegisterUnsupported(typ, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.taken(typ) {
		panic(fmt.Sprintf("framework: plugin type %q registered twice", typ))
	}
	r.rejected[typ] = reason
}

func (r *Registry) taken(typ string) bool {
	_, a := r.factories[typ]
	_, b := r.ignored[typ]
	_, c := r.rejected[typ]
	return a || b || c
}

// Lookup returns the factory for typ.
func (r *Registry) Lookup(typ string) (Factory, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	f, ok := r.factories[typ]
	return f, ok
}

// Types returns the sorted names of the types that build real plugins.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.factories))
	for t := range r.factories {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// resolve classifies typ: a factory, an ignored type (with reason) or an error naming the type.
func (r *Registry) resolve(typ string) (Factory, string, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if f, ok := r.factories[typ]; ok {
		return f, "", nil
	}
	if why, ok := r.ignored[typ]; ok {
		return nil, why, nil
	}
	if why, ok := r.rejected[typ]; ok {
		return nil, "", fmt.Errorf("plugin type %q is not supported: %s", typ, why)
	}
	known := make([]string, 0, len(r.factories))
	for t := range r.factories {
		known = append(known, t)
	}
	slices.Sort(known)
	return nil, "", fmt.Errorf("unknown plugin type %q (known types: %s)", typ, strings.Join(known, ", "))
}

// DecodeParams strictly decodes a plugin's parameters into v: unknown fields are an error, and
// absent or null parameters leave v unchanged (its defaults).
func DecodeParams(raw json.RawMessage, v any) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("parameters: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("parameters: trailing data after the object")
	}
	return nil
}

// NoParams checks that a plugin without parameters got none (an empty object is accepted).
func NoParams(raw json.RawMessage) error {
	return DecodeParams(raw, &struct{}{})
}

// Duration is a time.Duration written in config parameters as a Go duration string ("200ms",
// "2s"), like Kubernetes' metav1.Duration that GIE uses.
type Duration struct{ time.Duration }

// UnmarshalJSON parses a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"2s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }
