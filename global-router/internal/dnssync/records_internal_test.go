package dnssync

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

func planConfig() Config {
	cfg := DefaultConfig()
	cfg.HostedZoneID, cfg.RecordName = "Z1", "api.example.com"
	cfg.Targets = map[string]Target{
		"a": {Values: []string{"192.0.2.1", "192.0.2.2"}},
		"b": {Values: []string{"192.0.2.3"}, AWSRegion: "eu-west-1"},
	}
	return cfg
}

func TestPlan(t *testing.T) {
	cfg := planConfig()
	reordered := cfg.record("a")
	reordered.ResourceRecords = []types.ResourceRecord{{Value: aws.String("192.0.2.2")}, {Value: aws.String("192.0.2.1")}}
	changed := cfg.record("b")
	changed.TTL = aws.Int64(300)
	tests := []struct {
		name    string
		drained []string
		have    map[string]types.ResourceRecordSet
		want    []string // "ACTION region"
	}{
		{"empty zone", nil, nil, []string{"UPSERT a", "UPSERT b"}},
		{"in step", nil, map[string]types.ResourceRecordSet{"a": reordered, "b": cfg.record("b")}, nil},
		{
			"drained",
			[]string{"b"},
			map[string]types.ResourceRecordSet{"a": cfg.record("a"), "b": cfg.record("b")},
			[]string{"DELETE b"},
		},
		{"undrained", nil, map[string]types.ResourceRecordSet{"a": cfg.record("a")}, []string{"UPSERT b"}},
		{"drifted", nil, map[string]types.ResourceRecordSet{"a": cfg.record("a"), "b": changed}, []string{"UPSERT b"}},
		{
			"all drained fail open",
			[]string{"a", "b"},
			map[string]types.ResourceRecordSet{"a": cfg.record("a")},
			[]string{"UPSERT b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := cfg.desired(func(r string) bool { return slices.Contains(tt.drained, r) })
			var got []string
			for _, c := range plan(want, tt.have) {
				got = append(got, string(c.Action)+" "+*c.ResourceRecordSet.SetIdentifier)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("plan = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOwned(t *testing.T) {
	cfg := planConfig()
	other := func(edit func(*types.ResourceRecordSet)) types.ResourceRecordSet {
		rs := cfg.record("a")
		edit(&rs)
		return rs
	}
	tests := []struct {
		name string
		rs   types.ResourceRecordSet
		want bool
	}{
		{"own record", cfg.record("a"), true},
		{"upper case, no dot", other(func(rs *types.ResourceRecordSet) { rs.Name = aws.String("API.Example.com") }), true},
		{"other name", other(func(rs *types.ResourceRecordSet) { rs.Name = aws.String("www.example.com.") }), false},
		{"other type", other(func(rs *types.ResourceRecordSet) { rs.Type = types.RRTypeTxt }), false},
		{"unknown region", other(func(rs *types.ResourceRecordSet) { rs.SetIdentifier = aws.String("c") }), false},
		{"simple record", other(func(rs *types.ResourceRecordSet) { rs.SetIdentifier = nil }), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cfg.owned(tt.rs); got != tt.want {
				t.Fatalf("owned = %v, want %v", got, tt.want)
			}
		})
	}
	if got := cfg.record("b").Region; got != "eu-west-1" {
		t.Fatalf("record b region = %q, want the AWSRegion override", got)
	}
}

func TestBackoffGrowsAndIsBounded(t *testing.T) {
	s := &Syncer{cfg: planConfig()}
	prevMax := s.cfg.RetryMin
	for n := 1; n <= 40; n++ {
		d := s.backoff(n)
		if d <= 0 || d > s.cfg.RetryMax {
			t.Fatalf("backoff(%d) = %v, want in (0, %v]", n, d, s.cfg.RetryMax)
		}
		if n > 1 && n < 7 && d < prevMax/2 {
			t.Fatalf("backoff(%d) = %v shrank below half of %v", n, d, prevMax)
		}
		prevMax = min(s.cfg.RetryMin<<n, s.cfg.RetryMax)
	}
}
