package configstore

import (
	"fmt"
	"math"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

	"github.com/switchyard-dev/switchyard/global-router/internal/routing"
)

// ScorerWeightNames are the estimate terms a policy may weigh.
var ScorerWeightNames = []string{"rtt", "queue", "prefill", "in_flight"}

// maxWeight bounds a scorer weight; larger values are certainly typos.
const maxWeight = 1000

var (
	encodeOptions = protojson.MarshalOptions{UseProtoNames: true}
	// Stored values are decoded strictly: a field this router does not know (a typo, or a field
	// of a newer version that may restrict routing further) makes the value unreadable, so its
	// model is refused rather than routed with part of its policy.
	decodeOptions = protojson.UnmarshalOptions{}
)

// ValidatePolicy checks p and returns an error wrapping ErrInvalid that names the first bad field.
func ValidatePolicy(p *adminv1.Policy) error {
	if p == nil {
		return fmt.Errorf("%w: policy is missing", ErrInvalid)
	}
	if err := ValidateModel(p.GetModel()); err != nil {
		return err
	}
	if p.OverflowThreshold != nil {
		if t := p.GetOverflowThreshold(); !(t > 0 && t <= 1) {
			return fmt.Errorf("%w: overflow_threshold %v is outside (0, 1]", ErrInvalid, t)
		}
	}
	if err := validateRegions(p.GetAllowedRegions()); err != nil {
		return err
	}
	if p.GetOverflowCap() < 0 {
		return fmt.Errorf("%w: overflow_cap %d is negative", ErrInvalid, p.GetOverflowCap())
	}
	if p.GetRevision() < 0 {
		return fmt.Errorf("%w: revision %d is negative", ErrInvalid, p.GetRevision())
	}
	return validateWeights(p.GetScorerWeights())
}

func validateRegions(regions []string) error {
	for i, r := range regions {
		if err := ValidateName("region", r); err != nil {
			return fmt.Errorf("allowed_regions[%d]: %w", i, err)
		}
		if slices.Contains(regions[:i], r) {
			return fmt.Errorf("%w: allowed_regions[%d]: %q is listed twice", ErrInvalid, i, r)
		}
	}
	return nil
}

func validateWeights(w map[string]float64) error {
	for name, v := range w {
		if !slices.Contains(ScorerWeightNames, name) {
			return fmt.Errorf("%w: scorer_weights: unknown term %q (known: %v)", ErrInvalid, name, ScorerWeightNames)
		}
		if math.IsNaN(v) || v < 0 || v > maxWeight {
			return fmt.Errorf("%w: scorer_weights[%q] %v is outside [0, %d]", ErrInvalid, name, v, maxWeight)
		}
	}
	return nil
}

// EncodePolicy returns the stored form of p: protobuf JSON with the proto field names, without
// the revision (etcd's ModRevision is the revision). p must be valid.
func EncodePolicy(p *adminv1.Policy) ([]byte, error) {
	c := proto.CloneOf(p)
	c.Revision = 0
	b, err := encodeOptions.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("configstore: encode policy %q: %w", p.GetModel(), err)
	}
	return b, nil
}

// DecodePolicy parses the stored value of model's policy written at revision. A value that is not
// a valid policy for model gets an error wrapping ErrInvalid.
func DecodePolicy(model string, value []byte, revision int64) (*adminv1.Policy, error) {
	p := &adminv1.Policy{}
	if err := decodeOptions.Unmarshal(value, p); err != nil {
		return nil, fmt.Errorf("%w: policy %q: %v", ErrInvalid, model, err)
	}
	if p.GetModel() != model {
		return nil, fmt.Errorf("%w: policy stored under %q names model %q", ErrInvalid, model, p.GetModel())
	}
	p.Revision = 0
	if err := ValidatePolicy(p); err != nil {
		return nil, fmt.Errorf("stored policy %q: %w", model, err)
	}
	p.Revision = revision
	return p, nil
}

// RoutingPolicy converts a stored policy to the routing decision's form, with the defaults for
// the fields left unset; a nil policy gives routing.DefaultPolicy().
func RoutingPolicy(p *adminv1.Policy) routing.Policy {
	pol := routing.DefaultPolicy()
	if p == nil {
		return pol
	}
	if p.OverflowThreshold != nil {
		pol.OverflowThreshold = p.GetOverflowThreshold()
	}
	pol.AllowedRegions = slices.Clone(p.GetAllowedRegions())
	pol.OverflowCap = int(p.GetOverflowCap())
	pol.TTFTSLO = time.Duration(p.GetTtftSloMs()) * time.Millisecond
	return pol
}
