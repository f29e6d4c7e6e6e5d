package ctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	adminv1 "github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1"
	"github.com/switchyard-dev/switchyard/proto/gen/switchyard/admin/v1/adminv1connect"
)

// adminClient is the generated client; its method expressions are the calls.
type adminClient = adminv1connect.AdminServiceClient

// jsonOptions print protobuf JSON with the proto field names and every field.
var jsonOptions = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}

// marshalJSON returns msg as protobuf JSON, indented when indent is set. protojson varies its
// whitespace on purpose; encoding/json re-formats it so the output is stable.
func marshalJSON(msg proto.Message, indent bool) ([]byte, error) {
	b, err := jsonOptions.Marshal(msg)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if indent {
		err = json.Indent(&buf, b, "", "  ")
	} else {
		err = json.Compact(&buf, b)
	}
	buf.WriteByte('\n')
	return buf.Bytes(), err
}

// print writes msg as JSON with -o json, else runs table.
func (c *caller) print(msg proto.Message, table func() error) error {
	if c.inv.output != "json" {
		return table()
	}
	b, err := marshalJSON(msg, true)
	if err != nil {
		return err
	}
	_, err = c.out.Write(b)
	return err
}

// printWatch writes one watch message: a JSON object on one line with -o json, else a table
// under a timestamp.
func (c *caller) printWatch(msg *adminv1.WatchClustersResponse) error {
	if c.inv.output == "json" {
		b, err := marshalJSON(msg, false)
		if err != nil {
			return err
		}
		_, err = c.out.Write(b)
		return err
	}
	fmt.Fprintf(c.out, "--- %s\n", time.Now().Format(time.TimeOnly))
	return c.clusterTable(&adminv1.ListClustersResponse{Clusters: msg.GetClusters()})
}

// table writes rows under a header, aligned in columns.
func (c *caller) table(header string, rows [][]string) error {
	tw := tabwriter.NewWriter(c.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func (c *caller) clusterTable(resp *adminv1.ListClustersResponse) error {
	rows := make([][]string, 0, len(resp.GetClusters()))
	for _, cl := range resp.GetClusters() {
		var models []string
		for _, m := range cl.GetModels() {
			models = append(models, m.GetName())
		}
		rows = append(rows, []string{cl.GetRegion(), cl.GetName(), yesNo(cl.GetHealthy()), yesNo(cl.GetStale()),
			ms(float64(cl.GetSignalAgeMs())), drained(cl), orDash(strings.Join(models, ",")),
			fmt.Sprintf("%d/%d", cl.GetFreeKvTokens(), cl.GetTotalKvTokens()), strconv.Itoa(int(cl.GetQueueDepth())),
			strconv.Itoa(int(cl.GetRunning())), strconv.Itoa(int(cl.GetInFlight())), ms(cl.GetRttMs())})
	}
	return c.table(
		"REGION\tCLUSTER\tHEALTHY\tSTALE\tAGE\tDRAINED\tMODELS\tFREE_KV/TOTAL\tQUEUE\tRUNNING\tIN_FLIGHT\tRTT",
		rows,
	)
}

func drained(c *adminv1.Cluster) string {
	switch {
	case c.GetDrained() && c.GetRegionDrained():
		return "cluster,region"
	case c.GetDrained():
		return "cluster"
	case c.GetRegionDrained():
		return "region"
	}
	return "no"
}

func (c *caller) drainedCluster(resp *adminv1.DrainClusterResponse) error {
	_, err := fmt.Fprintf(c.out, "cluster %s %s\n", resp.GetCluster(), drainWord(resp.GetDrained()))
	return err
}

func (c *caller) drainedRegion(resp *adminv1.DrainRegionResponse) error {
	_, err := fmt.Fprintf(c.out, "region %s %s\n", resp.GetRegion(), drainWord(resp.GetDrained()))
	return err
}

func drainWord(drained bool) string {
	if drained {
		return "drained"
	}
	return "undrained"
}

func (c *caller) policyDetail(resp *adminv1.GetPolicyResponse) error {
	p := resp.GetPolicy()
	rows := [][]string{
		{"model", p.GetModel()},
		{"overflow_threshold", threshold(p)},
		{"allowed_regions", regions(p)},
		{"overflow_cap", capText(p.GetOverflowCap())},
		{"ttft_slo", slo(p.GetTtftSloMs())},
		{"scorer_weights", weights(p.GetScorerWeights())},
		{"revision", strconv.FormatInt(p.GetRevision(), 10)},
	}
	return c.table("FIELD\tVALUE", rows)
}

func (c *caller) policyStored(resp *adminv1.PutPolicyResponse) error {
	_, err := fmt.Fprintf(
		c.out,
		"policy for %s stored at revision %d\n",
		resp.GetPolicy().GetModel(),
		resp.GetPolicy().GetRevision(),
	)
	return err
}

func (c *caller) policyDeleted(resp *adminv1.DeletePolicyResponse) error {
	_, err := fmt.Fprintf(c.out, "policy for %s deleted; the defaults apply\n", resp.GetModel())
	return err
}

func (c *caller) policyTable(resp *adminv1.ListPoliciesResponse) error {
	rows := make([][]string, 0, len(resp.GetPolicies()))
	for _, p := range resp.GetPolicies() {
		rows = append(rows, []string{p.GetModel(), threshold(p), regions(p), capText(p.GetOverflowCap()),
			slo(p.GetTtftSloMs()), weights(p.GetScorerWeights()), strconv.FormatInt(p.GetRevision(), 10)})
	}
	if err := c.table(
		"MODEL\tTHRESHOLD\tREGIONS\tCAP\tTTFT_SLO\tWEIGHTS\tREVISION",
		rows,
	); err != nil ||
		len(resp.GetUnreadable()) == 0 {
		return err
	}
	fmt.Fprintf(
		c.out,
		"\nUNREADABLE: these stored values cannot be read; requests for their models are refused until each is\n"+
			"replaced (policy put --revision=REVISION) or deleted (policy delete MODEL)\n",
	)
	bad := make([][]string, 0, len(resp.GetUnreadable()))
	for _, u := range resp.GetUnreadable() {
		bad = append(bad, []string{u.GetModel(), strconv.FormatInt(u.GetRevision(), 10), u.GetError()})
	}
	return c.table("MODEL\tREVISION\tERROR", bad)
}

func (c *caller) explanation(resp *adminv1.ExplainRouteResponse) error {
	if resp.GetError() != "" {
		fmt.Fprintf(c.out, "no route: %s\n", resp.GetError())
	} else {
		fmt.Fprintf(
			c.out,
			"route: %s  chosen: %s  fallbacks: %s\n",
			resp.GetRoute(),
			resp.GetChosenCluster(),
			orDash(strings.Join(resp.GetFallbacks(), ",")),
		)
	}
	if p := resp.GetPolicy(); p == nil {
		fmt.Fprintf(c.out, "policy: none in force (the model is refused)\n\n")
	} else {
		fmt.Fprintf(c.out, "policy: threshold %s, regions %s, overflow cap %s, ttft slo %s, revision %d\n\n",
			threshold(p), regions(p), capText(p.GetOverflowCap()), slo(p.GetTtftSloMs()), p.GetRevision())
	}
	rows := make([][]string, 0, len(resp.GetCandidates()))
	for _, cd := range resp.GetCandidates() {
		est := "-"
		if cd.GetEligible() {
			est = ms(cd.GetEstimateMs())
		}
		rows = append(rows, []string{cd.GetCluster(), cd.GetRegion(), yesNo(cd.GetEligible()), yesNo(cd.GetChosen()),
			est, strconv.FormatFloat(cd.GetUtilization(), 'f', 2, 64), orDash(cd.GetReasonCode()), cd.GetReason()})
	}
	return c.table("CLUSTER\tREGION\tELIGIBLE\tCHOSEN\tESTIMATE\tUTIL\tCODE\tREASON", rows)
}

func (c *caller) memberTable(resp *adminv1.ListMembersResponse) error {
	rows := make([][]string, 0, len(resp.GetMembers()))
	for _, m := range resp.GetMembers() {
		state := strings.ToLower(strings.TrimPrefix(m.GetState().String(), "MEMBER_STATE_"))
		rows = append(rows, []string{m.GetName(), m.GetRole(), orDash(m.GetCluster()), m.GetRegion(), m.GetAddress(),
			state, ms(m.GetRttMs()), orDash(m.GetVersion()), orDash(m.GetUrl())})
	}
	return c.table("NAME\tROLE\tCLUSTER\tREGION\tADDRESS\tSTATE\tRTT\tVERSION\tURL", rows)
}

func threshold(p *adminv1.Policy) string {
	if p.OverflowThreshold == nil {
		return "0.8 (default)"
	}
	return strconv.FormatFloat(p.GetOverflowThreshold(), 'g', -1, 64)
}

func regions(p *adminv1.Policy) string {
	if len(p.GetAllowedRegions()) == 0 {
		return "(all)"
	}
	return strings.Join(p.GetAllowedRegions(), ",")
}

func capText(n int32) string {
	if n == 0 {
		return "none"
	}
	return strconv.Itoa(int(n))
}

func slo(msec uint32) string {
	if msec == 0 {
		return "none"
	}
	return (time.Duration(msec) * time.Millisecond).String()
}

func weights(w map[string]float64) string {
	if len(w) == 0 {
		return "-"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(w)) {
		parts = append(parts, k+"="+strconv.FormatFloat(w[k], 'g', -1, 64))
	}
	return strings.Join(parts, ",")
}

// ms formats fractional milliseconds as a duration, e.g. "120ms", "1.5s".
func ms(v float64) string {
	d := time.Duration(v * float64(time.Millisecond))
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
