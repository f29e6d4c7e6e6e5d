package gossip

import (
	"bytes"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	gossipv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/gossip/v1"
)

// Deltas. A publisher sends a full summary now and then and, between fulls, a SummaryDelta against
// its last full (the base): only the models, adapters and sketches that differ from the base.
// Every delta is against the base, never against the previous delta, so a receiver that missed
// some deltas applies the next one; a receiver that lacks the base ignores deltas until it has it.
// Unchanged parts of a rebuilt summary are shared with the base (summaries are immutable once
// stored), so applying a delta allocates only for what changed.

// Fields a delta treats apart from the figures it copies wholesale.
var (
	summaryFields   = (&gossipv1.CapacitySummary{}).ProtoReflect().Descriptor().Fields()
	fSummarySeq     = summaryFields.ByName("sequence")
	fSummaryGen     = summaryFields.ByName("generated_at_unix_nano")
	fSummaryModels  = summaryFields.ByName("models")
	fSummarySketch  = summaryFields.ByName("prefix_sketch")
	fSummarySig     = summaryFields.ByName("signature")
	modelFields     = (&gossipv1.ModelCapacity{}).ProtoReflect().Descriptor().Fields()
	fModelName      = modelFields.ByName("name")
	fModelAdapters  = modelFields.ByName("adapters")
	fModelSketch    = modelFields.ByName("prefix_sketch")
	fAdapterName    = (&gossipv1.AdapterCapacity{}).ProtoReflect().Descriptor().Fields().ByName("name")
	headerSkip      = []protoreflect.FieldDescriptor{fSummarySeq, fSummaryGen, fSummaryModels, fSummarySketch, fSummarySig}
	modelFigureSkip = []protoreflect.FieldDescriptor{fModelName, fModelAdapters, fModelSketch}
	modelFigureSet  = newFigureSet(modelFields.ByName("name").ContainingMessage(), modelFigureSkip)
	adapterSkip     = []protoreflect.FieldDescriptor{fAdapterName}
	adapterSet      = newFigureSet(fAdapterName.ContainingMessage(), adapterSkip)
)

// diffSummary returns next as a delta against base, or nil when a delta cannot express it: next is
// not a later summary of the same node, its models differ from base's in names or order, or a field
// outside the models and sketches changed. Applying the delta to base with applyDelta rebuilds a
// summary equal to next. The delta may share memory with next.
func diffSummary(base, next *gossipv1.CapacitySummary) *gossipv1.SummaryDelta {
	if base.GetNode() != next.GetNode() || base.GetSequence() == 0 || base.GetSequence() >= next.GetSequence() ||
		len(base.GetModels()) != len(next.GetModels()) ||
		!equalExcept(base.ProtoReflect(), next.ProtoReflect(), headerSkip) {
		return nil
	}
	d := &gossipv1.SummaryDelta{
		Node: next.GetNode(), Sequence: next.GetSequence(), BaseSequence: base.GetSequence(),
		GeneratedAtUnixNano: next.GetGeneratedAtUnixNano(), Signature: next.GetSignature(),
	}
	for i, nm := range next.GetModels() {
		md, ok := diffModel(base.GetModels()[i], nm)
		if !ok {
			return nil
		}
		if md != nil {
			md.Index = uint32(i)
			d.Models = append(d.Models, md)
		}
	}
	d.PrefixSketch, d.PrefixSketchRemoved = diffSketch(base.GetPrefixSketch(), next.GetPrefixSketch())
	return d
}

// legacyDelta rewrites d, a delta of next made by diffSummary, as nodes that predate figure masks
// read it: every changed model and adapter with all its figures. Written with encodeBlob (not
// encodeDelta), it keeps the long header. It modifies and returns d.
func legacyDelta(d *gossipv1.SummaryDelta, next *gossipv1.CapacitySummary) *gossipv1.SummaryDelta {
	for _, md := range d.GetModels() {
		m := next.GetModels()[md.GetIndex()]
		if md.FigureMask != 0 {
			md.Figures, md.FigureMask, md.FigureValues = modelFigures(m), 0, nil
		}
		for _, ad := range md.GetAdapters() {
			if ad.FigureMask != 0 {
				ad.Figures, ad.FigureMask, ad.FigureValues = adapterFigures(m.GetAdapters()[ad.GetIndex()]), 0, nil
			}
		}
	}
	return d
}

// diffModel returns how n differs from b (nil when it does not); ok is false when they are not the
// same model.
func diffModel(b, n *gossipv1.ModelCapacity) (md *gossipv1.ModelDelta, ok bool) {
	if b.GetName() != n.GetName() {
		return nil, false
	}
	md = &gossipv1.ModelDelta{}
	if !equalExcept(b.ProtoReflect(), n.ProtoReflect(), modelFigureSkip) {
		var ok bool
		if md.FigureMask, md.FigureValues, ok = modelFigureSet.diff(b.ProtoReflect(), n.ProtoReflect()); !ok {
			md.Figures = modelFigures(n)
		}
	}
	if sameAdapterNames(b.GetAdapters(), n.GetAdapters()) {
		for j, na := range n.GetAdapters() {
			if ad := diffAdapter(b.GetAdapters()[j], na); ad != nil {
				ad.Index = uint32(j)
				md.Adapters = append(md.Adapters, ad)
			}
		}
	} else {
		md.AdapterList = &gossipv1.AdapterList{Adapters: n.GetAdapters()}
	}
	md.PrefixSketch, md.PrefixSketchRemoved = diffSketch(b.GetPrefixSketch(), n.GetPrefixSketch())
	if md.Figures == nil && md.FigureMask == 0 && len(md.Adapters) == 0 && md.AdapterList == nil &&
		md.PrefixSketch == nil &&
		!md.PrefixSketchRemoved {
		return nil, true
	}
	return md, true
}

// diffAdapter returns how adapter n differs from b in its figures (nil when it does not): the
// changed figures one by one when a mask can name them, else all of them.
func diffAdapter(b, n *gossipv1.AdapterCapacity) *gossipv1.AdapterDelta {
	if equalExcept(b.ProtoReflect(), n.ProtoReflect(), adapterSkip) {
		return nil
	}
	if mask, values, ok := adapterSet.diff(b.ProtoReflect(), n.ProtoReflect()); ok {
		return &gossipv1.AdapterDelta{FigureMask: mask, FigureValues: values}
	}
	return &gossipv1.AdapterDelta{Figures: adapterFigures(n)}
}

func sameAdapterNames(a, b []*gossipv1.AdapterCapacity) bool {
	return slices.EqualFunc(a, b, func(x, y *gossipv1.AdapterCapacity) bool { return x.GetName() == y.GetName() })
}

// diffSketch returns the sketch to send (nil: unchanged) and whether the sketch was removed.
func diffSketch(b, n *gossipv1.PrefixSketch) (*gossipv1.PrefixSketch, bool) {
	switch {
	case proto.Equal(b, n):
		return nil, false
	case n == nil:
		return nil, true
	}
	return n, false
}

// applyDelta rebuilds the summary d describes on top of base, the complete summary with sequence
// d's base sequence. The result shares unchanged models, adapters and sketches with base and
// takes ownership of d's messages; neither may be modified afterwards. It refuses (ErrMalformed)
// a delta of another node or base, one with out-of-range or unordered indices, and one carrying
// fields this version does not know.
func applyDelta(base *gossipv1.CapacitySummary, d *gossipv1.SummaryDelta) (*gossipv1.CapacitySummary, error) {
	if d.GetNode() != base.GetNode() || d.GetBaseSequence() != base.GetSequence() ||
		d.GetSequence() <= base.GetSequence() {
		return nil, fmt.Errorf("%w: delta %s/%d against base %d does not apply to %s/%d", ErrMalformed,
			d.GetNode(), d.GetSequence(), d.GetBaseSequence(), base.GetNode(), base.GetSequence())
	}
	if len(d.ProtoReflect().GetUnknown()) > 0 {
		return nil, fmt.Errorf("%w: delta carries unknown fields", ErrMalformed)
	}
	out := &gossipv1.CapacitySummary{}
	copyExcept(out.ProtoReflect(), base.ProtoReflect(), headerSkip)
	out.Sequence, out.GeneratedAtUnixNano, out.Signature = d.GetSequence(), d.GetGeneratedAtUnixNano(), d.GetSignature()
	out.Models = slices.Clone(base.GetModels())
	next := 0
	for _, md := range d.GetModels() {
		i := int(md.GetIndex())
		if int64(md.GetIndex()) < int64(next) || i >= len(out.Models) {
			return nil, fmt.Errorf("%w: delta model index %d out of order or range", ErrMalformed, md.GetIndex())
		}
		m, err := applyModel(base.GetModels()[i], md)
		if err != nil {
			return nil, err
		}
		out.Models[i], next = m, i+1
	}
	sk, err := applySketch(base.GetPrefixSketch(), d.GetPrefixSketch(), d.GetPrefixSketchRemoved())
	if err != nil {
		return nil, err
	}
	out.PrefixSketch = sk
	return out, nil
}

// applyModel rebuilds one model from its base and its delta.
func applyModel(b *gossipv1.ModelCapacity, md *gossipv1.ModelDelta) (*gossipv1.ModelCapacity, error) {
	if len(md.ProtoReflect().GetUnknown()) > 0 ||
		(md.GetAdapterList() != nil && len(md.GetAdapterList().ProtoReflect().GetUnknown()) > 0) {
		return nil, fmt.Errorf("%w: model delta carries unknown fields", ErrMalformed)
	}
	m, err := modelAfter(b, md)
	if err != nil {
		return nil, err
	}
	m.Name = b.GetName()
	adapters, err := applyAdapters(b.GetAdapters(), md)
	if err != nil {
		return nil, err
	}
	m.Adapters = adapters
	if m.PrefixSketch, err = applySketch(
		b.GetPrefixSketch(),
		md.GetPrefixSketch(),
		md.GetPrefixSketchRemoved(),
	); err != nil {
		return nil, err
	}
	return m, nil
}

// modelAfter returns the model's figures after md: the figures it carries, or the base's with the
// figures its mask names replaced.
func modelAfter(b *gossipv1.ModelCapacity, md *gossipv1.ModelDelta) (*gossipv1.ModelCapacity, error) {
	m := md.GetFigures()
	switch {
	case m != nil && (md.GetFigureMask() != 0 || len(md.GetFigureValues()) > 0):
		return nil, fmt.Errorf("%w: model delta with both figures and a figure mask", ErrMalformed)
	case m != nil && (m.GetName() != "" || len(m.GetAdapters()) > 0 || m.GetPrefixSketch() != nil):
		return nil, fmt.Errorf("%w: model figures carry name, adapters or sketch", ErrMalformed)
	case m != nil:
		return m, nil
	}
	m = modelFigures(b)
	if err := modelFigureSet.apply(m, md.GetFigureMask(), md.GetFigureValues()); err != nil {
		return nil, fmt.Errorf("model %d: %w", md.GetIndex(), err)
	}
	return m, nil
}

// applyAdapters returns the model's adapter list after md.
func applyAdapters(base []*gossipv1.AdapterCapacity, md *gossipv1.ModelDelta) ([]*gossipv1.AdapterCapacity, error) {
	if md.GetAdapterList() != nil {
		if len(md.GetAdapters()) > 0 {
			return nil, fmt.Errorf("%w: model delta with both adapter list and adapter deltas", ErrMalformed)
		}
		return md.GetAdapterList().GetAdapters(), nil
	}
	if len(md.GetAdapters()) == 0 {
		return base, nil
	}
	out := slices.Clone(base)
	next := 0
	for _, ad := range md.GetAdapters() {
		j := int(ad.GetIndex())
		if int64(ad.GetIndex()) < int64(next) || j >= len(out) {
			return nil, fmt.Errorf("%w: delta adapter index %d out of order or range", ErrMalformed, ad.GetIndex())
		}
		a, err := adapterAfter(base[j], ad)
		if err != nil {
			return nil, err
		}
		a.Name = base[j].GetName()
		out[j], next = a, j+1
	}
	return out, nil
}

// adapterAfter returns an adapter's figures after ad: the figures it carries, or the base's with
// the figures its mask names replaced.
func adapterAfter(b *gossipv1.AdapterCapacity, ad *gossipv1.AdapterDelta) (*gossipv1.AdapterCapacity, error) {
	a, masked := ad.GetFigures(), ad.GetFigureMask() != 0 || len(ad.GetFigureValues()) > 0
	switch {
	case (a == nil) == !masked || (a != nil && a.GetName() != "") || len(ad.ProtoReflect().GetUnknown()) > 0:
		return nil, fmt.Errorf(
			"%w: adapter delta %d without figures or mask, with both, with a name or unknown fields",
			ErrMalformed,
			ad.GetIndex(),
		)
	case a != nil:
		return a, nil
	}
	a = adapterFigures(b)
	if err := adapterSet.apply(a, ad.GetFigureMask(), ad.GetFigureValues()); err != nil {
		return nil, fmt.Errorf("adapter %d: %w", ad.GetIndex(), err)
	}
	return a, nil
}

// applySketch returns the sketch after a delta that sent sk (nil: unchanged) or removed it.
func applySketch(base, sk *gossipv1.PrefixSketch, removed bool) (*gossipv1.PrefixSketch, error) {
	switch {
	case removed && sk != nil:
		return nil, fmt.Errorf("%w: sketch both sent and removed", ErrMalformed)
	case removed:
		return nil, nil
	case sk != nil:
		return sk, nil
	}
	return base, nil
}

// modelFigures returns a copy of m's figures: every field but name, adapters and sketch, and its
// unknown fields. It copies field by field, not through reflection, because a receiver calls it
// for every model of every delta; TestFiguresCopyEveryField fails when a field is added to
// ModelCapacity and not here.
func modelFigures(m *gossipv1.ModelCapacity) *gossipv1.ModelCapacity {
	out := &gossipv1.ModelCapacity{
		ReadyPods: m.GetReadyPods(), TotalKvTokens: m.GetTotalKvTokens(), FreeKvTokens: m.GetFreeKvTokens(),
		QueueDepth: m.GetQueueDepth(), Running: m.GetRunning(), Saturation: m.GetSaturation(), Saturated: m.GetSaturated(),
		PredictedTtftMs: m.GetPredictedTtftMs(), PrefillTokensPerSecond: m.GetPrefillTokensPerSecond(),
		DecodeTokensPerSecond: m.GetDecodeTokensPerSecond(), MeanPredictedTtftMs: m.GetMeanPredictedTtftMs(),
	}
	if u := m.ProtoReflect().GetUnknown(); len(u) > 0 {
		out.ProtoReflect().SetUnknown(u)
	}
	return out
}

// adapterFigures returns a copy of a with its name cleared (see modelFigures).
func adapterFigures(a *gossipv1.AdapterCapacity) *gossipv1.AdapterCapacity {
	out := &gossipv1.AdapterCapacity{
		ResidentPods: a.GetResidentPods(),
		QueueDepth:   a.GetQueueDepth(),
		Running:      a.GetRunning(),
	}
	if u := a.ProtoReflect().GetUnknown(); len(u) > 0 {
		out.ProtoReflect().SetUnknown(u)
	}
	return out
}

// copyExcept sets every populated field of src but skip, and src's unknown fields, on dst. Composite
// values are shared, not copied.
func copyExcept(dst, src protoreflect.Message, skip []protoreflect.FieldDescriptor) {
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if !slices.Contains(skip, fd) {
			dst.Set(fd, v)
		}
		return true
	})
	if u := src.GetUnknown(); len(u) > 0 {
		dst.SetUnknown(u)
	}
}

// equalExcept reports whether a and b, of the same type, are equal in every field but skip,
// unknown fields included.
func equalExcept(a, b protoreflect.Message, skip []protoreflect.FieldDescriptor) bool {
	fields := a.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if slices.Contains(skip, fd) {
			continue
		}
		if a.Has(fd) != b.Has(fd) || !a.Get(fd).Equal(b.Get(fd)) {
			return false
		}
	}
	return bytes.Equal(a.GetUnknown(), b.GetUnknown())
}
