package ctl

import (
	"context"
	"fmt"
	"os"
	"strings"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"

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
	}
	// The key files are read when the command runs.
	return func(ctx context.Context, c *caller) error {
		keys, err := readPublicKeys(splitList(inv.publicKeyFiles))
		if err != nil {
			return err
		}
		r := &adminv1.ClusterRegistration{Cluster: name, Region: inv.region, GatewayUrls: splitList(inv.gatewayURLs),
			Models: splitList(inv.models), PublicKeys: keys, Revision: inv.revision}
		return unary(&adminv1.RegisterClusterRequest{Registration: r}, adminClient.RegisterCluster, (*caller).registered)(ctx, c)
	}, nil
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
	return unary(&adminv1.RevokeClusterRequest{Cluster: name, Revision: inv.revision}, adminClient.RevokeCluster, (*caller).revoked), nil
}

func (inv *invocation) registrations() (command, error) {
	if err := inv.noOperands(); err != nil {
		return nil, err
	}
	return unary(&adminv1.ListRegistrationsRequest{}, adminClient.ListRegistrations, (*caller).registrationTable), nil
}

func (c *caller) registered(resp *adminv1.RegisterClusterResponse) error {
	r := resp.GetRegistration()
	_, err := fmt.Fprintf(c.out, "cluster %s registered at revision %d (keys %s)\n", r.GetCluster(), r.GetRevision(), strings.Join(r.GetKeyIds(), ", "))
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
	return c.table("CLUSTER\tREGION\tGATEWAY URLS\tMODELS\tKEY IDS\tREVISION", rows)
}
