package scrape

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

// MetricSpec names the metric family that feeds one signal, optionally only its series with
// given label values: GIE's metric-spec syntax, "name" or "name{label=value,...}", as its
// endpoint picker's --total-queued-requests-metric and related flags take it.
type MetricSpec struct {
	// Name is the family's name; empty reads the signal from no family at all.
	Name string
	// Labels are the label values a series must carry to count (all of them); none: every series.
	Labels []LabelMatch
}

// LabelMatch is one label a series must carry with exactly this value.
type LabelMatch struct {
	Name, Value string
}

// maxNameBytes bounds a metric name in a MetricSpec: the parser recognises wanted names by
// their length first (see familySet.mayWant), which covers names shorter than 64 bytes.
const maxNameBytes = 63

// ParseMetricSpec parses GIE's metric-spec syntax: "name", "name{label=value}" or
// "name{label1=value1,label2=value2}". Label values may be quoted ("value"); surrounding
// double quotes around the whole spec, as a shell-less container argument may carry them, are
// dropped. The empty string is the zero MetricSpec: the signal is read from no family.
func ParseMetricSpec(s string) (MetricSpec, error) {
	s = unquote(strings.TrimSpace(s))
	if s == "" {
		return MetricSpec{}, nil
	}
	name, labels, hasLabels := strings.Cut(s, "{")
	spec := MetricSpec{Name: strings.TrimSpace(name)}
	if err := checkMetricName(spec.Name); err != nil {
		return MetricSpec{}, fmt.Errorf("metric spec %q: %w", s, err)
	}
	if !hasLabels {
		return spec, nil
	}
	body, ok := strings.CutSuffix(strings.TrimSpace(labels), "}")
	if !ok || strings.ContainsAny(body, "{}") {
		return MetricSpec{}, fmt.Errorf("metric spec %q: want name{label=value,...}", s)
	}
	for pair := range strings.SplitSeq(body, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k, v = strings.TrimSpace(k), unquote(strings.TrimSpace(v))
		if !ok || !validLabelName(k) || v == "" {
			return MetricSpec{}, fmt.Errorf("metric spec %q: label %q: want label=value", s, strings.TrimSpace(pair))
		}
		if slices.ContainsFunc(spec.Labels, func(l LabelMatch) bool { return l.Name == k }) {
			// a series carries one value per label: the selector could never match
			return MetricSpec{}, fmt.Errorf("metric spec %q: label %q given twice", s, k)
		}
		spec.Labels = append(spec.Labels, LabelMatch{Name: k, Value: v})
	}
	return spec, nil
}

// String writes the spec back in GIE's syntax.
func (m MetricSpec) String() string {
	if len(m.Labels) == 0 {
		return m.Name
	}
	pairs := make([]string, len(m.Labels))
	for i, l := range m.Labels {
		pairs[i] = l.Name + "=" + l.Value
	}
	return m.Name + "{" + strings.Join(pairs, ",") + "}"
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

func checkMetricName(name string) error {
	switch {
	case name == "":
		return errors.New("empty metric name")
	case len(name) > maxNameBytes:
		return fmt.Errorf("metric name longer than %d bytes", maxNameBytes)
	}
	for i := range len(name) {
		if c := name[i]; !isNameByte(c, i == 0) && c != ':' {
			return fmt.Errorf("metric name %q: byte %q is not allowed", name, c)
		}
	}
	return nil
}

func validLabelName(name string) bool {
	if name == "" {
		return false
	}
	for i := range len(name) {
		if !isNameByte(name[i], i == 0) {
			return false
		}
	}
	return true
}

// Families replaces the metric families some signals are read from, on every pod whatever its
// engine, as GIE's endpoint picker applies its metric flags to every pod. A nil field keeps each
// engine's own names (families.go); a zero MetricSpec reads that signal from nothing (GIE's
// --lora-info-metric "" for servers without LoRA metrics).
type Families struct {
	// Waiting is the queue (GIE's --total-queued-requests-metric), summed over matching series.
	Waiting *MetricSpec
	// Running is the requests running (--total-running-requests-metric), summed.
	Running *MetricSpec
	// KVUsage is the KV-cache use 0..1 (--kv-cache-usage-percentage-metric), averaged.
	KVUsage *MetricSpec
	// LoRA is vLLM's LoRA info metric shape (--lora-info-metric): labels running_lora_adapters,
	// waiting_lora_adapters and max_lora, the newest series by value.
	LoRA *MetricSpec
	// CacheInfo is the cache-config info metric (--cache-info-metric), whose labels carry the
	// block size and count under the engine's label names (vLLM: block_size, num_gpu_blocks).
	CacheInfo *MetricSpec
}

// IsZero reports whether f replaces nothing.
func (f Families) IsZero() bool { return f == Families{} }

// overrides lists the replaced signals with the fields each replaces in the engine's set.
func (f Families) overrides() []struct {
	spec     *MetricSpec
	field    field
	replaced []field
} {
	return []struct {
		spec     *MetricSpec
		field    field
		replaced []field
	}{
		{f.Waiting, fieldWaiting, []field{fieldWaiting}},
		{f.Running, fieldRunning, []field{fieldRunning}},
		{f.KVUsage, fieldKVUsage, []field{fieldKVUsage, fieldKVUsageOld}},
		{f.LoRA, fieldLoRA, []field{fieldLoRA}},
		{f.CacheInfo, fieldCacheConfig, []field{fieldCacheConfig}},
	}
}

// apply returns base with f's replacements: the replaced fields' names dropped and each spec's
// family read through a selector. base is not modified.
func (f Families) apply(base *familySet) *familySet {
	out := &familySet{names: maps.Clone(base.names), blockSizeLabel: base.blockSizeLabel, blocksLabel: base.blocksLabel,
		cacheLabels: base.cacheLabels, selectors: map[string]*selection{}}
	for _, o := range f.overrides() {
		if o.spec == nil {
			continue
		}
		maps.DeleteFunc(out.names, func(_ string, fl field) bool { return slices.Contains(o.replaced, fl) })
	}
	for _, o := range f.overrides() {
		if o.spec == nil || o.spec.Name == "" {
			continue
		}
		sel := out.selectors[o.spec.Name]
		if sel == nil {
			sel = &selection{}
			out.selectors[o.spec.Name] = sel
			if own := out.names[o.spec.Name]; own != fieldNone {
				// the engine reads this family for a signal not replaced: it still does
				sel.add(selector{field: own}, out.keepFor(own))
			}
		}
		sel.add(selector{field: o.field, labels: o.spec.Labels}, out.keepFor(o.field))
		out.names[o.spec.Name] = fieldSelected
	}
	out.nameLengths = out.lengths()
	return out
}

// keepFor returns the labels family field needs besides a selector's.
func (fs *familySet) keepFor(f field) []string {
	switch f {
	case fieldCacheConfig:
		return fs.cacheLabels
	case fieldLoRA:
		return loraLabels
	}
	return nil
}

// selection is how the samples of one replaced family are split among signals.
type selection struct {
	selectors []selector
	keep      []string // every label a selector or its field reads
}

// selector feeds one field with the samples whose labels match.
type selector struct {
	field  field
	labels []LabelMatch
}

func (s *selection) add(sel selector, keep []string) {
	s.selectors = append(s.selectors, sel)
	for _, l := range sel.labels {
		keep = append(keep, l.Name)
	}
	for _, k := range keep {
		if !slices.Contains(s.keep, k) {
			s.keep = append(s.keep, k)
		}
	}
}

// matches reports whether a sample's labels carry every label the selector asks for.
func (sel selector) matches(lbls []label) bool {
	for _, want := range sel.labels {
		found := false
		for _, l := range lbls {
			if l.name == want.Name {
				found = l.value == want.Value
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// catalog is the family set of every engine.
type catalog map[datastore.Engine]*familySet

// catalog returns the family set of every engine with f applied.
func (f Families) catalog() catalog {
	out := make(catalog, len(families))
	for engine, base := range families {
		if f.IsZero() {
			out[engine] = base
		} else {
			out[engine] = f.apply(base)
		}
	}
	return out
}

// familiesFor returns the family set of engine; unknown engines use vLLM's names.
func (c catalog) familiesFor(engine datastore.Engine) *familySet {
	if f := c[engine]; f != nil {
		return f
	}
	return c[datastore.EngineVLLM]
}
