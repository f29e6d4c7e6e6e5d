package dnssync

import (
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
)

// fqdn lowercases a DNS name and adds the trailing dot, the form Route 53 lists names in.
func fqdn(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

// desired returns the record set of every region that should be published: every configured
// region that is not drained. When every region is drained it returns them all (fail open, as
// Route 53 itself answers with every record when all health checks fail): a name that resolves
// to nothing would be cached negatively by resolvers and outlive the drain.
func (c Config) desired(drained func(region string) bool) map[string]types.ResourceRecordSet {
	out := map[string]types.ResourceRecordSet{}
	for region := range c.Targets {
		if !drained(region) {
			out[region] = c.record(region)
		}
	}
	if len(out) == 0 {
		for region := range c.Targets {
			out[region] = c.record(region)
		}
	}
	return out
}

// record builds region's latency record set.
func (c Config) record(region string) types.ResourceRecordSet {
	t := c.Targets[region]
	rs := types.ResourceRecordSet{
		Name:          aws.String(fqdn(c.RecordName)),
		Type:          types.RRType(c.RecordType),
		SetIdentifier: aws.String(region),
		Region:        types.ResourceRecordSetRegion(t.awsRegion(region)),
	}
	if t.HealthCheckID != "" {
		rs.HealthCheckId = aws.String(t.HealthCheckID)
	}
	if t.AliasDNSName != "" {
		rs.AliasTarget = &types.AliasTarget{
			DNSName:              aws.String(fqdn(t.AliasDNSName)),
			HostedZoneId:         aws.String(t.AliasHostedZoneID),
			EvaluateTargetHealth: t.EvaluateTargetHealth,
		}
		return rs
	}
	rs.TTL = aws.Int64(int64(c.TTL.Seconds()))
	for _, v := range t.Values {
		rs.ResourceRecords = append(rs.ResourceRecords, types.ResourceRecord{Value: aws.String(v)})
	}
	return rs
}

// owned reports whether the sync owns rs: a record of the configured name and type whose set
// identifier is one of the configured regions. Nothing else is ever changed.
func (c Config) owned(rs types.ResourceRecordSet) bool {
	if rs.Name == nil || rs.SetIdentifier == nil || string(rs.Type) != c.RecordType {
		return false
	}
	_, ok := c.Targets[*rs.SetIdentifier]
	return ok && fqdn(*rs.Name) == fqdn(c.RecordName)
}

// plan returns the changes that turn the owned sets have into want, in region order: an UPSERT
// for a missing or different record, a DELETE (of the record exactly as listed) for one that
// should not exist.
func plan(want, have map[string]types.ResourceRecordSet) []types.Change {
	regions := slices.Sorted(maps.Keys(want))
	for r := range have {
		if _, ok := want[r]; !ok {
			regions = append(regions, r)
		}
	}
	slices.Sort(regions)
	var out []types.Change
	for _, r := range regions {
		w, wok := want[r]
		h, hok := have[r]
		switch {
		case wok && (!hok || !same(w, h)):
			out = append(out, types.Change{Action: types.ChangeActionUpsert, ResourceRecordSet: &w})
		case !wok && hok:
			out = append(out, types.Change{Action: types.ChangeActionDelete, ResourceRecordSet: &h})
		}
	}
	return out
}

// same reports whether two record sets of one region publish the same thing.
func same(a, b types.ResourceRecordSet) bool {
	return a.Region == b.Region && aws.ToString(a.HealthCheckId) == aws.ToString(b.HealthCheckId) &&
		aws.ToInt64(a.TTL) == aws.ToInt64(b.TTL) && sameAlias(a.AliasTarget, b.AliasTarget) &&
		slices.Equal(values(a), values(b))
}

func sameAlias(a, b *types.AliasTarget) bool {
	if a == nil || b == nil {
		return a == b
	}
	return fqdn(aws.ToString(a.DNSName)) == fqdn(aws.ToString(b.DNSName)) &&
		aws.ToString(a.HostedZoneId) == aws.ToString(b.HostedZoneId) && a.EvaluateTargetHealth == b.EvaluateTargetHealth
}

// values returns a set's values, normalised and sorted.
func values(rs types.ResourceRecordSet) []string {
	out := make([]string, 0, len(rs.ResourceRecords))
	for _, r := range rs.ResourceRecords {
		out = append(out, strings.TrimSuffix(strings.ToLower(aws.ToString(r.Value)), "."))
	}
	slices.Sort(out)
	return out
}
