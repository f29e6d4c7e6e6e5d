package framework

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// SaturationDetector judges the candidate set as a whole, as GIE's saturation detector does: a
// result >= 1 means the pool is saturated and the request should wait (flow control) rather than
// be sent. Implementations must be safe for concurrent use.
type SaturationDetector interface {
	Plugin
	Saturation(ctx context.Context, cs *CycleState, eps []Endpoint) float64
}

// SaturationFilter is a Filter that removes saturated endpoints. When it removes every candidate
// the scheduler reports saturation (the front door may queue) instead of "no endpoints".
type SaturationFilter interface {
	Filter
	// RemovesSaturated marks the filter; it has no behaviour.
	RemovesSaturated()
}

// CycleStateProducer marks a Scorer whose Score writes CycleState that other scorers read (the
// prefix-cache scorer's match lengths); producers run before the other scorers.
type CycleStateProducer interface {
	Scorer
	ProducesCycleState()
}

// WeightedScorer is a scorer with its profile weight.
type WeightedScorer struct {
	Scorer
	Weight float64
}

// Profile is one instantiated scheduling profile: the plugins a request runs through.
type Profile struct {
	// Name is the profile's name from the config.
	Name string
	// Filters run in order; Scorers are summed with their weights; Picker chooses.
	Filters []Filter
	Scorers []WeightedScorer
	Picker  Picker
	// Detector, when set, gates the request on pool saturation before filtering.
	Detector SaturationDetector
	// PreRequests, FirstTokens and PostResponses are the hooks of the profile's plugins.
	PreRequests   []PreRequest
	FirstTokens   []FirstToken
	PostResponses []PostResponse
	// Plugins are every instantiated plugin by instance name.
	Plugins map[string]Plugin
	// PD, when set, disaggregates prefill from decode: this profile is the decode profile and
	// Prefill the prefill profile (which has no saturation detector and whose FirstToken and
	// PostResponse hooks are not run: the gateway sees only the decode endpoint's answer).
	PD      DisaggregationHandler
	Prefill *Profile
}

// HasSaturationFilter reports whether any filter of the profile removes saturated endpoints.
func (p *Profile) HasSaturationFilter() bool {
	for _, f := range p.Filters {
		if _, ok := f.(SaturationFilter); ok {
			return true
		}
	}
	return false
}

// BuildOptions controls how a config becomes a Profile.
type BuildOptions struct {
	// Registry resolves plugin types (DefaultRegistry when nil).
	Registry *Registry
	// Handle is passed to every factory.
	Handle Handle
	// Logger receives configuration warnings (ignored GIE types, unused plugins).
	Logger *slog.Logger
	// DefaultPicker is the picker type added when the profile names none ("max-score-picker").
	DefaultPicker string
	// DefaultDetector, when set, is the saturation detector type instantiated with default
	// parameters when the config names none and the profile has no saturation filter (GIE adds a
	// utilization-detector the same way). Empty means no implicit detector (baseline profiles).
	DefaultDetector string
}

// Build instantiates the config's plugins and its scheduling profile: the only one, or, when the
// config defines a DisaggregationHandler, its decode profile with the prefill profile attached.
func Build(c *EndpointPickerConfig, opts BuildOptions) (*Profile, error) {
	b := builder{cfg: c, opts: opts, plugins: make(map[string]Plugin), ignored: make(map[string]bool)}
	if b.opts.Registry == nil {
		b.opts.Registry = DefaultRegistry
	}
	if b.opts.Logger == nil {
		b.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if b.opts.DefaultPicker == "" {
		b.opts.DefaultPicker = "max-score-picker"
	}
	if err := b.instantiate(); err != nil {
		return nil, err
	}
	b.warnIgnoredSections()
	used := make(map[string]bool)
	p, err := b.build(used)
	if err != nil {
		return nil, err
	}
	for _, name := range b.order {
		if !used[name] {
			b.opts.Logger.Warn("plugin defined but not used by the profile", "plugin", name)
		}
	}
	return p, nil
}

// build builds the single profile, or the decode and prefill profiles of a handler.
func (b *builder) build(used map[string]bool) (*Profile, error) {
	h, err := b.handler(used)
	if err != nil {
		return nil, err
	}
	if h == nil {
		if len(b.cfg.SchedulingProfiles) > 1 {
			return nil, fmt.Errorf("schedulingProfiles: %d profiles given and no profile handler: Switchyard runs "+
				"one profile, or a decode and a prefill profile with a pd-profile-handler", len(b.cfg.SchedulingProfiles))
		}
		var name string
		var refs []SchedulingPlugin
		if len(b.cfg.SchedulingProfiles) == 1 {
			name, refs = b.cfg.SchedulingProfiles[0].Name, b.cfg.SchedulingProfiles[0].Plugins
		} else {
			name, refs = "default", b.allRefs()
		}
		return b.profile(name, refs, true, used)
	}
	decode, prefill := h.Profiles()
	if len(b.cfg.SchedulingProfiles) != 2 {
		return nil, fmt.Errorf("schedulingProfiles: plugin %q (type %s) needs exactly two profiles, %q and %q; got %d",
			h.TypedName().Name, h.TypedName().Type, decode, prefill, len(b.cfg.SchedulingProfiles))
	}
	dp, err := b.named(decode, true, used)
	if err != nil {
		return nil, err
	}
	if dp.Prefill, err = b.named(prefill, false, used); err != nil {
		return nil, err
	}
	dp.PD = h
	addHooks(dp, h)
	return dp, nil
}

// addHooks adds the request hooks pl implements to p's (a handler's own, which no profile
// references).
func addHooks(p *Profile, pl Plugin) {
	if x, ok := pl.(PreRequest); ok {
		p.PreRequests = append(p.PreRequests, x)
	}
	if x, ok := pl.(FirstToken); ok {
		p.FirstTokens = append(p.FirstTokens, x)
	}
	if x, ok := pl.(PostResponse); ok {
		p.PostResponses = append(p.PostResponses, x)
	}
}

// handler returns the config's DisaggregationHandler, if any (at most one).
func (b *builder) handler(used map[string]bool) (DisaggregationHandler, error) {
	var h DisaggregationHandler
	for _, name := range b.order {
		if x, ok := b.plugins[name].(DisaggregationHandler); ok {
			if h != nil {
				return nil, fmt.Errorf("plugins: two profile handlers, %q and %q", h.TypedName().Name, name)
			}
			h, used[name] = x, true
		}
	}
	return h, nil
}

// named builds the scheduling profile called name; primary profiles get a saturation detector.
func (b *builder) named(name string, primary bool, used map[string]bool) (*Profile, error) {
	for _, sp := range b.cfg.SchedulingProfiles {
		if sp.Name == name {
			return b.profile(sp.Name, sp.Plugins, primary, used)
		}
	}
	return nil, fmt.Errorf("schedulingProfiles: the profile handler needs a profile named %q", name)
}

type builder struct {
	cfg     *EndpointPickerConfig
	opts    BuildOptions
	plugins map[string]Plugin
	ignored map[string]bool
	order   []string
}

func (b *builder) instantiate() error {
	for i, spec := range b.cfg.Plugins {
		name := spec.Name
		if name == "" {
			name = spec.Type
		}
		f, why, err := b.opts.Registry.resolve(spec.Type)
		if err != nil {
			return fmt.Errorf("plugins[%d] %q: %w", i, name, err)
		}
		if f == nil {
			b.opts.Logger.Warn("ignoring gie plugin type", "plugin", name, "type", spec.Type, "reason", why)
			b.ignored[name] = true
			continue
		}
		p, err := f(name, spec.Parameters, b.opts.Handle)
		if err != nil {
			return fmt.Errorf("plugins[%d] %q (type %s): %w", i, name, spec.Type, err)
		}
		b.plugins[name] = p
		b.order = append(b.order, name)
	}
	return nil
}

func (b *builder) warnIgnoredSections() {
	if len(b.cfg.FlowControl) > 0 {
		b.opts.Logger.Warn("ignoring flowControl section: the gateway's flow control is set by its own flags")
	}
	if b.cfg.DataLayer != nil {
		b.opts.Logger.Warn("ignoring dataLayer section: the gateway scrapes model-server metrics itself")
	}
}

// allRefs is the profile of a config that defines none: like GIE, one profile named "default"
// with every filter, scorer and picker.
func (b *builder) allRefs() []SchedulingPlugin {
	var refs []SchedulingPlugin
	for _, name := range b.order {
		switch b.plugins[name].(type) {
		case Filter, Scorer, Picker:
			refs = append(refs, SchedulingPlugin{PluginRef: name})
		}
	}
	return refs
}

// profile builds one scheduling profile from its plugin references; in marks the plugins it
// uses, also in used (every profile's). A primary profile gets the saturation detector.
func (b *builder) profile(name string, refs []SchedulingPlugin, primary bool, used map[string]bool) (*Profile, error) {
	p := &Profile{Name: name, Plugins: b.plugins}
	in := make(map[string]bool)
	for _, ref := range refs {
		if err := b.place(p, ref, in); err != nil {
			return nil, fmt.Errorf("schedulingProfiles[%s]: %w", p.Name, err)
		}
	}
	if err := b.finish(p, in, primary); err != nil {
		return nil, err
	}
	if err := b.bind(p, in); err != nil {
		return nil, err
	}
	for n := range in {
		used[n] = true
	}
	return p, nil
}

func (b *builder) place(p *Profile, ref SchedulingPlugin, used map[string]bool) error {
	if b.ignored[ref.PluginRef] {
		return nil
	}
	pl := b.plugins[ref.PluginRef]
	if used[ref.PluginRef] {
		return fmt.Errorf("plugin %q referenced twice", ref.PluginRef)
	}
	used[ref.PluginRef] = true
	placed := false
	if f, ok := pl.(Filter); ok {
		p.Filters = append(p.Filters, f)
		placed = true
	}
	if s, ok := pl.(Scorer); ok {
		w := 1.0
		if ref.Weight != nil {
			w = *ref.Weight
		}
		p.Scorers = append(p.Scorers, WeightedScorer{Scorer: s, Weight: w})
		placed = true
	}
	if pk, ok := pl.(Picker); ok {
		if p.Picker != nil {
			return fmt.Errorf("two pickers: %q and %q", p.Picker.TypedName().Name, ref.PluginRef)
		}
		p.Picker = pk
		placed = true
	}
	if !placed {
		return fmt.Errorf("plugin %q (type %s) is not a filter, scorer or picker", ref.PluginRef, pl.TypedName().Type)
	}
	return nil
}

func (b *builder) finish(p *Profile, used map[string]bool, primary bool) error {
	if p.Picker == nil {
		pk, err := b.defaultPlugin(b.opts.DefaultPicker)
		if err != nil {
			return err
		}
		picker, ok := pk.(Picker)
		if !ok {
			return fmt.Errorf("default picker type %q is not a picker", b.opts.DefaultPicker)
		}
		p.Picker = picker
	}
	if primary {
		if err := b.detector(p, used); err != nil {
			return err
		}
	}
	for _, name := range b.order {
		if !used[name] {
			continue
		}
		if h, ok := b.plugins[name].(PreRequest); ok {
			p.PreRequests = append(p.PreRequests, h)
		}
		if h, ok := b.plugins[name].(FirstToken); ok {
			p.FirstTokens = append(p.FirstTokens, h)
		}
		if h, ok := b.plugins[name].(PostResponse); ok {
			p.PostResponses = append(p.PostResponses, h)
		}
	}
	return nil
}

func (b *builder) detector(p *Profile, used map[string]bool) error {
	ref := ""
	if b.cfg.SaturationDetector != nil {
		ref = b.cfg.SaturationDetector.PluginRef
	}
	if ref == "" {
		for _, name := range b.order {
			if _, ok := b.plugins[name].(SaturationDetector); ok {
				ref = name
				break
			}
		}
	}
	if ref != "" {
		d, ok := b.plugins[ref].(SaturationDetector)
		if !ok {
			return fmt.Errorf("saturationDetector: plugin %q is not a saturation detector", ref)
		}
		p.Detector, used[ref] = d, true
		return nil
	}
	if b.opts.DefaultDetector == "" || p.HasSaturationFilter() {
		return nil
	}
	pl, err := b.defaultPlugin(b.opts.DefaultDetector)
	if err != nil {
		return err
	}
	d, ok := pl.(SaturationDetector)
	if !ok {
		return errors.New("default saturation detector type is not a saturation detector")
	}
	p.Detector = d
	return nil
}

func (b *builder) defaultPlugin(typ string) (Plugin, error) {
	f, ok := b.opts.Registry.Lookup(typ)
	if !ok {
		return nil, fmt.Errorf("default plugin type %q is not registered", typ)
	}
	pl, err := f(typ, nil, b.opts.Handle)
	if err != nil {
		return nil, fmt.Errorf("default plugin %q: %w", typ, err)
	}
	return pl, nil
}

// bind runs the Bind hook of every plugin the profile uses.
func (b *builder) bind(p *Profile, used map[string]bool) error {
	for _, name := range b.order {
		if bd, ok := b.plugins[name].(Binder); ok && used[name] {
			if err := bd.Bind(p); err != nil {
				return fmt.Errorf("plugin %q (type %s): %w", name, bd.TypedName().Type, err)
			}
		}
	}
	return nil
}
