package ctl

import (
	"context"
	"fmt"
	"strings"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

// registerRegion registers (or, with the revision read, updates) a region's keys: the public
// keys of the region key its aggregators sign region digests with.
func (inv *invocation) registerRegion() (command, error) {
	name, err := inv.operand("REGION", false)
	if err != nil {
		return nil, err
	}
	if len(splitList(inv.publicKeyFiles)) == 0 {
		return nil, fmt.Errorf("missing --public-key-file")
	}
	return func(ctx context.Context, c *caller) error {
		keys, err := readPublicKeys(splitList(inv.publicKeyFiles))
		if err != nil {
			return err
		}
		r := &adminv1.RegionRegistration{Region: name, PublicKeys: keys, Revision: inv.revision}
		return unary(&adminv1.RegisterRegionRequest{Registration: r}, adminClient.RegisterRegion,
			(*caller).regionRegistered)(ctx, c)
	}, nil
}

func (inv *invocation) revokeRegion() (command, error) {
	name, err := inv.operand("REGION", false)
	if err != nil {
		return nil, err
	}
	return unary(&adminv1.RevokeRegionRequest{Region: name, Revision: inv.revision}, adminClient.RevokeRegion,
		(*caller).regionRevoked), nil
}

func (c *caller) regionRegistered(resp *adminv1.RegisterRegionResponse) error {
	r := resp.GetRegistration()
	_, err := fmt.Fprintf(c.out, "region %s registered at revision %d (keys %s)\n", r.GetRegion(), r.GetRevision(),
		strings.Join(r.GetKeyIds(), ", "))
	return err
}

func (c *caller) regionRevoked(resp *adminv1.RevokeRegionResponse) error {
	_, err := fmt.Fprintf(c.out, "region %s registration revoked\n", resp.GetRegion())
	return err
}

// regionTable prints the region registrations under the cluster registrations.
func (c *caller) regionTable(regions []*adminv1.RegionRegistration) error {
	if len(regions) == 0 {
		return nil
	}
	rows := make([][]string, 0, len(regions))
	for _, r := range regions {
		rows = append(rows, []string{r.GetRegion(), strings.Join(r.GetKeyIds(), ","), fmt.Sprint(r.GetRevision())})
	}
	fmt.Fprintln(c.out)
	return c.table("REGION\tKEY IDS\tREVISION", rows)
}
