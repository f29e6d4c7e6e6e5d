package ctl

import (
	"context"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"
)

// registerRegion registers (or, with the revision read, updates) a region's keys: the public
// keys of the region key its aggregators sign region digests with.
func (inv *invocation) registerRegion() (command, error) {
	name, err := inv.operand("REGION", false)
	if err != nil {
		return nil, err
	}
	switch {
	case len(splitList(inv.publicKeyFiles)) == 0:
		return nil, fmt.Errorf("missing --public-key-file")
	case inv.replace && inv.set["revision"]:
		return nil, fmt.Errorf("--replace reads the stored revision itself: give --replace or --revision, not both")
	}
	return func(ctx context.Context, c *caller) error {
		keys, err := readPublicKeys(splitList(inv.publicKeyFiles))
		if err != nil {
			return err
		}
		r := &adminv1.RegionRegistration{Region: name, PublicKeys: keys, Revision: inv.revision}
		if inv.replace {
			return c.replaceRegion(ctx, r)
		}
		return unary(&adminv1.RegisterRegionRequest{Registration: r}, adminClient.RegisterRegion,
			(*caller).regionRegistered)(ctx, c)
	}, nil
}

// replaceRegion makes r the region's registration whatever is stored (--replace), as
// replaceRegistration does for a cluster: it writes r over the stored revision (creating it when
// none is stored), writes nothing when the stored one has the same keys, and still fails with
// FailedPrecondition when another writer changed it between the read and the write. A deploy
// job can therefore run it on every upgrade.
func (c *caller) replaceRegion(ctx context.Context, r *adminv1.RegionRegistration) error {
	return c.replace(ctx,
		func(list *adminv1.ListRegistrationsResponse) (proto.Message, func() error) {
			for _, stored := range list.GetRegions() {
				if stored.GetRegion() != r.GetRegion() {
					continue
				}
				if sameSet(keyStrings(stored.GetPublicKeys()), keyStrings(r.GetPublicKeys())) {
					return &adminv1.RegisterRegionResponse{Registration: stored}, func() error {
						_, err := fmt.Fprintf(c.out, "region %s unchanged at revision %d (keys %s)\n", stored.GetRegion(),
							stored.GetRevision(), strings.Join(stored.GetKeyIds(), ", "))
						return err
					}
				}
				r.Revision = stored.GetRevision()
			}
			return nil, nil
		},
		func(ctx context.Context, cl adminv1connect.AdminServiceClient) (proto.Message, func() error, error) {
			resp, err := cl.RegisterRegion(ctx, connect.NewRequest(&adminv1.RegisterRegionRequest{Registration: r}))
			if err != nil {
				return nil, nil, err
			}
			return resp.Msg, func() error { return c.regionRegistered(resp.Msg) }, nil
		})
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
