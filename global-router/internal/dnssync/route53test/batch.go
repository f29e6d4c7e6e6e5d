package route53test

import (
	"fmt"
	"reflect"
	"slices"
)

// apply applies changes to sets (a copy) and returns the result, or Route 53's messages for
// the changes it rejects (then nothing is applied).
func apply(sets []RecordSet, changes []change) ([]RecordSet, []string) {
	var msgs []string
	for _, c := range changes {
		rs := normalize(c.Set)
		if msg := validate(rs); msg != "" {
			msgs = append(msgs, msg)
			continue
		}
		i := slices.IndexFunc(sets, func(x RecordSet) bool { return compareSets(x, rs) == 0 })
		var msg string
		sets, msg = applyOne(sets, i, c.Action, rs)
		if msg != "" {
			msgs = append(msgs, msg)
		}
	}
	if len(msgs) > 0 {
		return nil, msgs
	}
	sortSets(sets)
	return sets, nil
}

// applyOne applies one change; i is the index of the set with the same key, or -1.
func applyOne(sets []RecordSet, i int, action string, rs RecordSet) ([]RecordSet, string) {
	key := fmt.Sprintf("[%s, %s, %q]", rs.Name, rs.Type, rs.SetIdentifier)
	switch action {
	case "CREATE", "UPSERT":
		if i >= 0 && action == "CREATE" {
			return sets, "Tried to create resource record set " + key + " but it already exists"
		}
		if i < 0 && mixesRouting(sets, rs) {
			return sets, "RRSet " + key + " mixes a routing policy with a simple record of the same name and type"
		}
		if i >= 0 {
			sets[i] = rs
			return sets, ""
		}
		return append(sets, rs), ""
	case "DELETE":
		if i < 0 || !reflect.DeepEqual(sets[i], rs) {
			return sets, "Tried to delete resource record set " + key + " but it was not found or its values did not match"
		}
		return slices.Delete(sets, i, i+1), ""
	}
	return sets, "unknown action " + action
}

// validate checks what Route 53 checks for the record shapes the sync writes.
func validate(rs RecordSet) string {
	switch {
	case rs.Name == "." || rs.Type == "":
		return "record set needs a name and a type"
	case (rs.AliasTarget == nil) == (len(rs.ResourceRecords) == 0):
		return "record set " + rs.Name + " needs either resource records or an alias target"
	case rs.AliasTarget == nil && rs.TTL == nil:
		return "record set " + rs.Name + " without an alias target needs a TTL"
	case rs.AliasTarget != nil && rs.TTL != nil:
		return "alias record set " + rs.Name + " must not have a TTL"
	case (rs.SetIdentifier == "") != (rs.Region == "" && rs.Weight == nil):
		return "record set " + rs.Name + " needs a set identifier exactly when it has a routing policy"
	}
	return ""
}

// mixesRouting reports whether adding rs would mix sets with and without a set identifier
// under one name and type.
func mixesRouting(sets []RecordSet, rs RecordSet) bool {
	return slices.ContainsFunc(sets, func(x RecordSet) bool {
		return x.Name == rs.Name && x.Type == rs.Type && (x.SetIdentifier == "") != (rs.SetIdentifier == "")
	})
}

// normalize stores names as Route 53 returns them.
func normalize(rs RecordSet) RecordSet {
	rs.Name = fqdn(rs.Name)
	rs.ResourceRecords = slices.Clone(rs.ResourceRecords)
	if rs.AliasTarget != nil {
		a := *rs.AliasTarget
		a.DNSName = fqdn(a.DNSName)
		rs.AliasTarget = &a
	}
	return rs
}
