package ctl

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

// policyFromFlags builds the policy of "policy put": the file's (-f) if given, then each field
// flag given on top of it. Flags left out leave the field unset (its default applies).
func (inv *invocation) policyFromFlags() (*adminv1.Policy, error) {
	p := &adminv1.Policy{}
	if inv.file != "" {
		if err := readPolicyFile(inv.file, p); err != nil {
			return nil, usagef("-f %s: %v", inv.file, err)
		}
	}
	if err := inv.applyPolicyFlags(p); err != nil {
		return nil, usagef("%v", err)
	}
	if p.GetModel() == "" {
		return nil, usagef("no model: give --model or a file with \"model\"")
	}
	return p, nil
}

// readPolicyFile decodes protobuf JSON (proto or JSON field names) from path, "-" for stdin.
func readPolicyFile(path string, p *adminv1.Policy) error {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return err
	}
	return protojson.Unmarshal(b, p)
}

func (inv *invocation) applyPolicyFlags(p *adminv1.Policy) error {
	if inv.set["model"] {
		p.Model = inv.model
	}
	if inv.set["overflow-threshold"] {
		f, err := strconv.ParseFloat(inv.overflowThreshold, 64)
		if err != nil {
			return fmt.Errorf("--overflow-threshold=%q: want a number in (0, 1]", inv.overflowThreshold)
		}
		p.OverflowThreshold = proto.Float64(f)
	}
	if inv.set["allowed-regions"] {
		p.AllowedRegions = splitList(inv.allowedRegions)
	}
	if inv.set["overflow-cap"] {
		if inv.overflowCap > math.MaxInt32 {
			return fmt.Errorf("--overflow-cap=%d is too large", inv.overflowCap)
		}
		p.OverflowCap = int32(inv.overflowCap)
	}
	if inv.set["revision"] {
		p.Revision = inv.revision
	}
	if err := inv.applySLO(p); err != nil {
		return err
	}
	return inv.applyWeights(p)
}

// applySLO reads --ttft-slo as a duration ("800ms", "1.5s") or a whole number of milliseconds.
func (inv *invocation) applySLO(p *adminv1.Policy) error {
	if !inv.set["ttft-slo"] {
		return nil
	}
	ms, err := strconv.ParseUint(inv.ttftSLO, 10, 32)
	if err != nil {
		d, derr := time.ParseDuration(inv.ttftSLO)
		if derr != nil || d < 0 || d.Milliseconds() > math.MaxUint32 {
			return fmt.Errorf("--ttft-slo=%q: want a duration such as 800ms", inv.ttftSLO)
		}
		ms = uint64(d.Milliseconds())
	}
	p.TtftSloMs = uint32(ms)
	return nil
}

// applyWeights reads --scorer-weights as "term=weight,term=weight".
func (inv *invocation) applyWeights(p *adminv1.Policy) error {
	if !inv.set["scorer-weights"] {
		return nil
	}
	p.ScorerWeights = map[string]float64{}
	for _, kv := range splitList(inv.weights) {
		k, v, ok := strings.Cut(kv, "=")
		w, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if !ok || err != nil {
			return fmt.Errorf("--scorer-weights: %q is not term=weight", kv)
		}
		p.ScorerWeights[strings.TrimSpace(k)] = w
	}
	return nil
}

// splitList splits a comma list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
