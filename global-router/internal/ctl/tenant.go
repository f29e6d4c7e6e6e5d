package ctl

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"connectrpc.com/connect"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
)

func (inv *invocation) tenantSet() (command, error) {
	name, err := inv.operand("NAME", false)
	if err != nil {
		return nil, err
	}
	t := &adminv1.Tenant{Name: name, TokensPerMinute: inv.tokensPerMinute, RequestsPerSecond: inv.requestsPerSecond,
		MaxConcurrent: inv.maxConcurrent, ApiKeySha256: splitList(inv.apiKeyDigests), Revision: inv.revision}
	if inv.set["revision"] {
		return unary(&adminv1.PutTenantRequest{Tenant: t}, adminClient.PutTenant, (*caller).tenantStored), nil
	}
	return func(ctx context.Context, c *caller) error { return c.setTenant(ctx, t) }, nil
}

// setTenant writes t over whatever is stored: it reads the stored revision (0 when none is
// stored) and writes at it, so a tenant changed between the read and the write still fails with
// FailedPrecondition rather than being overwritten unseen.
func (c *caller) setTenant(ctx context.Context, t *adminv1.Tenant) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	getCtx, cancel := c.callCtx(ctx)
	defer cancel()
	got, err := cl.GetTenant(getCtx, connect.NewRequest(&adminv1.GetTenantRequest{Name: t.GetName()}))
	switch {
	case err == nil:
		t.Revision = got.Msg.GetTenant().GetRevision()
	case connect.CodeOf(err) == connect.CodeNotFound:
		t.Revision = 0
	default:
		return err
	}
	return unary(&adminv1.PutTenantRequest{Tenant: t}, adminClient.PutTenant, (*caller).tenantStored)(ctx, c)
}

func (inv *invocation) tenantGet() (command, error) {
	name, err := inv.operand("NAME", false)
	if err != nil {
		return nil, err
	}
	return unary(&adminv1.GetTenantRequest{Name: name}, adminClient.GetTenant, (*caller).tenantDetail), nil
}

func (inv *invocation) tenantDelete() (command, error) {
	name, err := inv.operand("NAME", false)
	if err != nil {
		return nil, err
	}
	if inv.revision < 0 {
		return nil, errors.New("--revision must be >= 0")
	}
	return unary(
		&adminv1.DeleteTenantRequest{Name: name, Revision: inv.revision},
		adminClient.DeleteTenant,
		(*caller).tenantDeleted,
	), nil
}

func (inv *invocation) tenantList() (command, error) {
	if err := inv.noOperands(); err != nil {
		return nil, err
	}
	return unary(&adminv1.ListTenantsRequest{}, adminClient.ListTenants, (*caller).tenantTable), nil
}

func (c *caller) tenantStored(resp *adminv1.PutTenantResponse) error {
	t := resp.GetTenant()
	_, err := fmt.Fprintf(c.out, "tenant %s stored at revision %d\n", t.GetName(), t.GetRevision())
	return err
}

func (c *caller) tenantDeleted(resp *adminv1.DeleteTenantResponse) error {
	_, err := fmt.Fprintf(c.out, "tenant %s deleted\n", resp.GetName())
	return err
}

func (c *caller) tenantDetail(resp *adminv1.GetTenantResponse) error {
	return c.table(tenantHeader, [][]string{tenantRow(resp.GetTenant())})
}

func (c *caller) tenantTable(resp *adminv1.ListTenantsResponse) error {
	rows := make([][]string, 0, len(resp.GetTenants()))
	for _, t := range resp.GetTenants() {
		rows = append(rows, tenantRow(t))
	}
	return c.table(tenantHeader, rows)
}

const tenantHeader = "NAME\tTOKENS/MIN\tREQUESTS/S\tCONCURRENT\tAPI KEYS\tREVISION"

func tenantRow(t *adminv1.Tenant) []string {
	limit := func(v string, zero bool) string {
		if zero {
			return "-"
		}
		return v
	}
	return []string{t.GetName(),
		limit(strconv.FormatInt(t.GetTokensPerMinute(), 10), t.GetTokensPerMinute() == 0),
		limit(strconv.FormatFloat(t.GetRequestsPerSecond(), 'g', -1, 64), t.GetRequestsPerSecond() == 0),
		limit(strconv.FormatInt(t.GetMaxConcurrent(), 10), t.GetMaxConcurrent() == 0),
		strconv.Itoa(len(t.GetApiKeySha256())), strconv.FormatInt(t.GetRevision(), 10)}
}
