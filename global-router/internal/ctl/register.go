package ctl

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"connectrpc.com/connect"

	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"

	"github.com/switchyard-dev/switchyard/gossip"
)

func (inv *invocation) registerCluster() (command, error) {
	name, err := inv.operand("CLUSTER", false)
	if err != nil {
		return nil, err
	}
	switch {
	case inv.region == "":
		return nil, fmt.Errorf("missing --region")
	case len(splitList(inv.gatewayURLs)) == 0:
		return nil, fmt.Errorf("missing --gateway-urls")
	case len(splitList(inv.publicKeyFiles)) == 0:
		return nil, fmt.Errorf("missing --public-key-file")
	case inv.replace && inv.set["revision"]:
		return nil, fmt.Errorf("--replace reads the stored revision itself: give --replace or --revision, not both")
	}
	// The key files are read when the command runs.
	return func(ctx context.Context, c *caller) error {
		keys, err := readPublicKeys(splitList(inv.publicKeyFiles))
		if err != nil {
			return err
		}
		r := &adminv1.ClusterRegistration{Cluster: name, Region: inv.region, GatewayUrls: splitList(inv.gatewayURLs),
			Models: splitList(inv.models), PublicKeys: keys, Revision: inv.revision}
		if inv.replace {
			return c.replaceRegistration(ctx, r)
		}
		return unary(
			&adminv1.RegisterClusterRequest{Registration: r},
			adminClient.RegisterCluster,
			(*caller).registered,
		)(
			ctx,
			c,
		)
	}, nil
}

// replaceRegistration makes r the cluster's registration whatever is stored (--replace): it
// reads the stored registration and writes r over it at the revision read (creates it when none
// is stored), and writes nothing when the stored one already says the same. A registration
// changed between the read and the write still fails with FailedPrecondition, so a concurrent
// writer is never overwritten unseen; running the command again applies r over the new one.
func (c *caller) replaceRegistration(ctx context.Context, r *adminv1.ClusterRegistration) error {
	return c.replace(ctx,
		func(list *adminv1.ListRegistrationsResponse) (proto.Message, func() error) {
			for _, stored := range list.GetRegistrations() {
				if stored.GetCluster() != r.GetCluster() {
					continue
				}
				if sameRegistration(stored, r) {
					return &adminv1.RegisterClusterResponse{Registration: stored},
						func() error { return c.unchanged(stored) }
				}
				r.Revision = stored.GetRevision()
			}
			return nil, nil
		},
		func(ctx context.Context, cl adminv1connect.AdminServiceClient) (proto.Message, func() error, error) {
			resp, err := cl.RegisterCluster(ctx, connect.NewRequest(&adminv1.RegisterClusterRequest{Registration: r}))
			if err != nil {
				return nil, nil, err
			}
			return resp.Msg, func() error { return c.registered(resp.Msg) }, nil
		})
}

// replace is --replace for a registration: find looks r up in the stored registrations and
// returns the answer to print when the stored one already says the same (setting r's revision
// to the stored one's otherwise); else write writes r and returns the answer to print.
func (c *caller) replace(
	ctx context.Context,
	find func(*adminv1.ListRegistrationsResponse) (proto.Message, func() error),
	write func(context.Context, adminv1connect.AdminServiceClient) (proto.Message, func() error, error),
) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	listCtx, cancel := c.callCtx(ctx)
	defer cancel()
	list, err := cl.ListRegistrations(listCtx, connect.NewRequest(&adminv1.ListRegistrationsRequest{}))
	if err != nil {
		return err
	}
	if msg, table := find(list.Msg); msg != nil {
		return c.print(msg, table)
	}
	putCtx, cancelPut := c.callCtx(ctx)
	defer cancelPut()
	msg, table, err := write(putCtx, cl)
	if err != nil {
		return err
	}
	return c.print(msg, table)
}

// sameRegistration reports whether two registrations of a cluster allow the same: region,
// gateway URLs, models and public keys, in any order.
func sameRegistration(a, b *adminv1.ClusterRegistration) bool {
	return a.GetRegion() == b.GetRegion() && sameSet(a.GetGatewayUrls(), b.GetGatewayUrls()) &&
		sameSet(a.GetModels(), b.GetModels()) && sameSet(keyStrings(a.GetPublicKeys()), keyStrings(b.GetPublicKeys()))
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func keyStrings(keys [][]byte) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = string(k)
	}
	return out
}

// readPublicKeys reads Ed25519 public keys (PEM or base64 of the raw key) from files.
func readPublicKeys(paths []string) ([][]byte, error) {
	out := make([][]byte, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, usagef("--public-key-file: %v", err)
		}
		k, err := gossip.ParsePublicKey(b)
		if err != nil {
			return nil, usagef("--public-key-file %s: %v", p, err)
		}
		out = append(out, []byte(k))
	}
	return out, nil
}

func (inv *invocation) revokeCluster() (command, error) {
	name, err := inv.operand("CLUSTER", false)
	if err != nil {
		return nil, err
	}
	return unary(
		&adminv1.RevokeClusterRequest{Cluster: name, Revision: inv.revision},
		adminClient.RevokeCluster,
		(*caller).revoked,
	), nil
}

func (inv *invocation) registrations() (command, error) {
	if err := inv.noOperands(); err != nil {
		return nil, err
	}
	return unary(&adminv1.ListRegistrationsRequest{}, adminClient.ListRegistrations, (*caller).registrationTable), nil
}

func (c *caller) registered(resp *adminv1.RegisterClusterResponse) error {
	r := resp.GetRegistration()
	_, err := fmt.Fprintf(
		c.out,
		"cluster %s registered at revision %d (keys %s)\n",
		r.GetCluster(),
		r.GetRevision(),
		strings.Join(r.GetKeyIds(), ", "),
	)
	return err
}

func (c *caller) unchanged(r *adminv1.ClusterRegistration) error {
	_, err := fmt.Fprintf(
		c.out,
		"cluster %s unchanged at revision %d (keys %s)\n",
		r.GetCluster(),
		r.GetRevision(),
		strings.Join(r.GetKeyIds(), ", "),
	)
	return err
}

func (c *caller) revoked(resp *adminv1.RevokeClusterResponse) error {
	_, err := fmt.Fprintf(c.out, "cluster %s registration revoked\n", resp.GetCluster())
	return err
}

func (c *caller) registrationTable(resp *adminv1.ListRegistrationsResponse) error {
	rows := make([][]string, 0, len(resp.GetRegistrations()))
	for _, r := range resp.GetRegistrations() {
		models := strings.Join(r.GetModels(), ",")
		if models == "" {
			models = "(any)"
		}
		rows = append(rows, []string{r.GetCluster(), r.GetRegion(), strings.Join(r.GetGatewayUrls(), ","), models,
			strings.Join(r.GetKeyIds(), ","), fmt.Sprint(r.GetRevision())})
	}
	fmt.Fprintf(c.out, "identity mode: %s\n", resp.GetIdentityMode())
	if err := c.table("CLUSTER\tREGION\tGATEWAY URLS\tMODELS\tKEY IDS\tREVISION", rows); err != nil {
		return err
	}
	return c.regionTable(resp.GetRegions())
}
