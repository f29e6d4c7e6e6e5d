// Package route53test is a working fake of the two Route 53 operations the DNS sync uses,
// ListResourceRecordSets and ChangeResourceRecordSets, served over HTTP in Route 53's REST/XML
// protocol so the real aws-sdk-go-v2 client talks to it unchanged (point the client's
// BaseEndpoint at Endpoint.URL and give it static credentials). Change batches are validated
// and applied atomically as Route 53 does: CREATE of an existing set, DELETE of a set that does
// not match exactly, or a mix of latency and simple sets of one name and type is rejected with
// InvalidChangeBatch. Failures can be injected to exercise retries and throttling.
package route53test

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Operation names, for Calls.
const (
	OpList   = "ListResourceRecordSets"
	OpChange = "ChangeResourceRecordSets"
)

// Server holds hosted zones and their record sets. Its methods are safe for concurrent use.
type Server struct {
	mu       sync.Mutex
	zones    map[string][]RecordSet
	failures []failure
	calls    map[string]int
	changeID int
	pageSize int
}

type failure struct {
	status int
	code   string
}

// New returns a server with no zones.
func New() *Server {
	return &Server{zones: map[string][]RecordSet{}, calls: map[string]int{}, pageSize: 300}
}

// SetPageSize sets the most record sets one list page holds (Route 53's is 300), so tests can
// exercise paging.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = max(n, 1)
}

// AddZone creates the hosted zone id (e.g. "Z0123") holding sets.
func (s *Server) AddZone(id string, sets ...RecordSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := make([]RecordSet, 0, len(sets))
	for _, rs := range sets {
		z = append(z, normalize(rs))
	}
	sortSets(z)
	s.zones[id] = z
}

// Records returns a copy of the zone's record sets in Route 53's order.
func (s *Server) Records(zone string) []RecordSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.zones[zone])
}

// FailNext makes the next n requests fail with the HTTP status and the error code, e.g. 400
// "Throttling" (Route 53's rate limit) or 500 "InternalFailure".
func (s *Server) FailNext(n, status int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, failure{status: status, code: code})
	}
}

// Calls returns how many requests of the operation reached the server, failed ones included.
func (s *Server) Calls(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[op]
}

// Endpoint is one HTTP listener of a Server. Several endpoints share the server's zones, so a
// test can tell which client called.
type Endpoint struct {
	// URL is the endpoint's base URL on 127.0.0.1, for the SDK's BaseEndpoint.
	URL   string
	mu    sync.Mutex
	calls map[string]int
}

// Calls returns how many requests of the operation reached this endpoint.
func (e *Endpoint) Calls(op string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[op]
}

// Start serves the server on a new loopback listener, closed when the test ends.
func (s *Server) Start(t testing.TB) *Endpoint {
	t.Helper()
	e := &Endpoint{calls: map[string]int{}}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op := operation(r)
		e.mu.Lock()
		e.calls[op]++
		e.mu.Unlock()
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	e.URL = hs.URL
	return e
}

// operation names the Route 53 operation of a request, "" for anything else.
func operation(r *http.Request) string {
	rest, ok := strings.CutPrefix(r.URL.Path, "/2013-04-01/hostedzone/")
	_, tail, _ := strings.Cut(rest, "/")
	switch {
	case !ok:
		return ""
	case r.Method == http.MethodGet && tail == "rrset":
		return OpList
	case r.Method == http.MethodPost && (tail == "rrset" || tail == "rrset/"):
		return OpChange
	}
	return ""
}

// ServeHTTP answers the two operations; anything else gets 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := operation(r)
	if op == "" {
		writeError(w, http.StatusNotFound, "UnknownOperation", r.Method+" "+r.URL.Path)
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
		writeError(w, http.StatusForbidden, "MissingAuthenticationToken", "request is not signed")
		return
	}
	zone, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/2013-04-01/hostedzone/"), "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[op]++
	if len(s.failures) > 0 {
		f := s.failures[0]
		s.failures = s.failures[1:]
		writeError(w, f.status, f.code, "injected failure")
		return
	}
	if _, ok := s.zones[zone]; !ok {
		writeError(w, http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: "+zone)
		return
	}
	if op == OpList {
		s.list(w, r, zone)
		return
	}
	s.change(w, r, zone)
}

// list answers ListResourceRecordSets from the start name, type and identifier on.
func (s *Server) list(w http.ResponseWriter, r *http.Request, zone string) {
	q := r.URL.Query()
	maxItems := s.pageSize
	if v := q.Get("maxitems"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "InvalidInput", "maxitems "+v)
			return
		}
		maxItems = min(n, s.pageSize)
	}
	start := RecordSet{Name: fqdn(q.Get("name")), Type: q.Get("type"), SetIdentifier: q.Get("identifier")}
	resp := listResponse{Xmlns: namespace, MaxItems: maxItems}
	for _, rs := range s.zones[zone] {
		if start.Name != "." && compareSets(rs, start) < 0 {
			continue
		}
		if len(resp.Sets) == maxItems {
			resp.IsTruncated = true
			resp.NextRecordName, resp.NextRecordType, resp.NextRecordIdentifier = rs.Name, rs.Type, rs.SetIdentifier
			break
		}
		resp.Sets = append(resp.Sets, rs)
	}
	writeXML(w, http.StatusOK, resp)
}

// change applies a ChangeResourceRecordSets batch atomically.
func (s *Server) change(w http.ResponseWriter, r *http.Request, zone string) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req changeRequest
	if err == nil {
		err = xml.Unmarshal(body, &req)
	}
	if err != nil || len(req.Changes) == 0 {
		writeError(w, http.StatusBadRequest, "InvalidInput", fmt.Sprintf("malformed change batch: %v", err))
		return
	}
	next, msgs := apply(slices.Clone(s.zones[zone]), req.Changes)
	if len(msgs) > 0 {
		writeXML(w, http.StatusBadRequest, invalidChangeBatch{Xmlns: namespace, Messages: msgs, RequestID: "fake-request"})
		return
	}
	s.zones[zone] = next
	s.changeID++
	writeXML(w, http.StatusOK, changeResponse{Xmlns: namespace, ID: fmt.Sprintf("/change/C%08d", s.changeID),
		Status: "PENDING", SubmittedAt: time.Now().UTC().Format(time.RFC3339), Comment: req.Comment})
}

// sortSets orders sets as Route 53 lists them: by name with its labels reversed, then type,
// then set identifier.
func sortSets(sets []RecordSet) { slices.SortFunc(sets, compareSets) }

func compareSets(a, b RecordSet) int {
	return cmp.Or(cmp.Compare(reversed(a.Name), reversed(b.Name)), cmp.Compare(a.Type, b.Type),
		cmp.Compare(a.SetIdentifier, b.SetIdentifier))
}

func reversed(name string) string {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".")
}

// fqdn lowercases name and adds the trailing dot.
func fqdn(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}
