package contract_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-dev/switchyard/contract"
)

func readDoc(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/" + page)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the part of doc from the heading to the next heading of the same level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("no %q section", heading)
	}
	rest := doc[i+len(heading)+2:]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if j := strings.Index(rest, "\n"+level); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// tableRow matches a table row whose first cell is one backticked value: value, second cell.
var tableRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([^|]*) \\|")

// TestReasonsDocumented checks that docs/contract.md's reason table lists every Reason with its
// text, and nothing that is not a Reason.
func TestReasonsDocumented(t *testing.T) {
	rows := map[contract.Reason]string{}
	for _, m := range tableRow.FindAllStringSubmatch(section(t, readDoc(t, "contract.md"), "## Reasons"), -1) {
		r, err := contract.ParseReason(m[1])
		if err != nil {
			t.Errorf("docs/contract.md lists %q, which is not a contract.Reason", m[1])
			continue
		}
		if _, dup := rows[r]; dup {
			t.Errorf("docs/contract.md lists %q twice", r)
		}
		rows[r] = strings.TrimSpace(m[2])
	}
	for _, r := range contract.Reasons(0) {
		text, ok := rows[r]
		switch {
		case !ok:
			t.Errorf("%q (%s) is not in docs/contract.md's reason table", r, r.Text())
		case text != r.Text():
			t.Errorf("docs/contract.md gives %q the text %q, the code %q", r, text, r.Text())
		}
	}
}

// reasonMetrics are the metrics whose label takes reasons: the label and the reasons' use.
var reasonMetrics = map[string]struct {
	label string
	use   contract.Use
}{
	"switchyard_router_overflow_reason_total":      {"reason", contract.UseLeftRegion},
	"switchyard_router_policy_unavailable_total":   {"reason", contract.UsePolicy},
	"switchyard_gateway_summaries_published_total": {"reason", contract.UsePublish},
	"switchyard_gateway_flow_outcomes_total":       {"outcome", contract.UseFlowOutcome},
}

var (
	headerName  = regexp.MustCompile("`(x-(?:switchyard|gateway)-[a-z0-9-]*[a-z0-9])")
	errorCode   = regexp.MustCompile(`code: "([a-z_]+)"|"code":"([a-z_]+)"`)
	errorRow    = regexp.MustCompile("(?m)^\\| [1-5][0-9][0-9] \\| `([a-z_]+)` \\|")
	labelValues = regexp.MustCompile("(switchyard_[a-z_]+)\\{([a-z_]+)=((?:\"[a-z_]+\"\\|?)+)\\}")
	metricRow   = regexp.MustCompile("(?m)^\\| `(switchyard_[a-z_]+)` \\| `([a-z_]+)` \\| (.*)\\|$")
	backticked  = regexp.MustCompile("`([a-z_]+)`")
)

// TestDocsMatchContract checks the pages that describe the data path against the contract: every
// x-switchyard-* or x-gateway-* header they name is a contract header; every error code they
// name is an error reason, and a page's error table lists every code its tier answers; every
// value they give a reason-valued metric label is a reason of that metric, and a metrics-table
// row of such a metric lists all of them.
func TestDocsMatchContract(t *testing.T) {
	headers := headerValues(t)
	errors := contract.UseRouterError | contract.UseGatewayError
	pages := []struct {
		page   string
		errors contract.Use // the tier whose error table the page holds (0: none)
	}{
		{"gateway-data.md", 0},
		{"gateway.md", contract.UseGatewayError},
		{"router.md", 0},
		{"reliability.md", 0},
		{"contract.md", 0},
		{"admin.md", 0},
	}
	for _, p := range pages {
		t.Run(p.page, func(t *testing.T) {
			doc := readDoc(t, p.page)
			for _, m := range headerName.FindAllStringSubmatch(doc, -1) {
				if _, ok := headers[m[1]]; !ok {
					t.Errorf("names the header %s, which contract does not define", m[1])
				}
			}
			for _, m := range errorCode.FindAllStringSubmatch(doc, -1) {
				if r := contract.Reason(m[1] + m[2]); r.Uses()&errors == 0 {
					t.Errorf("names the error code %q, which is not an error reason", r)
				}
			}
			var table []contract.Reason
			for _, m := range errorRow.FindAllStringSubmatch(doc, -1) {
				r := contract.Reason(m[1])
				if r.Uses()&p.errors == 0 {
					t.Errorf("error table lists %q, which this tier does not answer", r)
				}
				table = append(table, r)
			}
			if p.errors != 0 {
				for _, r := range contract.Reasons(p.errors) {
					if !slices.Contains(table, r) {
						t.Errorf("error table does not list %q (%s)", r, r.Text())
					}
				}
			}
			for _, m := range labelValues.FindAllStringSubmatch(doc, -1) {
				rm, ok := reasonMetrics[m[1]]
				if !ok {
					continue
				}
				for _, v := range strings.Split(m[3], "|") {
					if r := contract.Reason(strings.Trim(v, `"`)); m[2] != rm.label || r.Uses()&rm.use == 0 {
						t.Errorf("%s{%s=%q}: not a reason of the metric's %s label", m[1], m[2], r, rm.label)
					}
				}
			}
			for _, m := range metricRow.FindAllStringSubmatch(doc, -1) {
				rm, ok := reasonMetrics[m[1]]
				if !ok || m[2] != rm.label {
					continue
				}
				var listed []contract.Reason
				for _, v := range backticked.FindAllStringSubmatch(m[3], -1) {
					listed = append(listed, contract.Reason(v[1]))
				}
				slices.Sort(listed)
				if want := contract.Reasons(rm.use); !slices.Equal(listed, want) {
					t.Errorf("the %s row lists %v, the contract %v", m[1], listed, want)
				}
			}
		})
	}
}
