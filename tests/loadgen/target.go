package loadgen

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/switchyard-dev/switchyard/tests/loadgen/workload"
)

// Target is one system under test. Every target receives the same request sequence.
type Target struct {
	// Name labels the target in reports (e.g. round-robin, switchyard).
	Name string
	// URL is the base URL (http://host:port, optionally ending in /v1).
	URL string
	// RegionURLs maps a workload region to the URL its clients use; a request whose region is not
	// listed goes to URL.
	RegionURLs map[string]string
}

// ParseTarget reads a --target value: URL, NAME=URL, or NAME=REGION@URL,REGION@URL,... (each
// region's clients send to their own URL; a bare URL in the list is the default).
func ParseTarget(s string) (Target, error) {
	name, spec, named := strings.Cut(s, "=")
	if !named || strings.Contains(name, "/") {
		name, spec = "", s
	}
	t := Target{Name: name}
	for part := range strings.SplitSeq(spec, ",") {
		region, u, regional := strings.Cut(part, "@")
		if !regional || strings.Contains(region, "/") {
			region, u = "", part
		}
		if err := checkURL(u); err != nil {
			return Target{}, fmt.Errorf("target %q: %w", s, err)
		}
		switch {
		case region == "" && t.URL != "":
			return Target{}, fmt.Errorf("target %q: more than one default URL", s)
		case region == "":
			t.URL = u
		default:
			if t.RegionURLs == nil {
				t.RegionURLs = map[string]string{}
			}
			t.RegionURLs[region] = u
		}
	}
	if t.Name == "" {
		t.Name = t.firstURL()
		if p, err := url.Parse(t.Name); err == nil && p.Host != "" {
			t.Name = p.Host
		}
	}
	return t, nil
}

func checkURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("bad URL %q: %w", u, err)
	}
	if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fmt.Errorf("bad URL %q: want http(s)://host:port", u)
	}
	return nil
}

// firstURL is the default URL, or else the first regional one by name.
func (t *Target) firstURL() string {
	if t.URL != "" {
		return t.URL
	}
	best := ""
	for r := range t.RegionURLs {
		if best == "" || r < best {
			best = r
		}
	}
	return t.RegionURLs[best]
}

// validate checks the target's URLs and that it can serve every region of w.
func (t *Target) validate(w *workload.Workload) error {
	if t.Name == "" {
		return fmt.Errorf("target: name must be set")
	}
	for _, u := range t.RegionURLs {
		if err := checkURL(u); err != nil {
			return fmt.Errorf("target %s: %w", t.Name, err)
		}
	}
	if t.URL != "" {
		if err := checkURL(t.URL); err != nil {
			return fmt.Errorf("target %s: %w", t.Name, err)
		}
		return nil
	}
	if len(w.Regions) == 0 {
		return fmt.Errorf("target %s: no default URL, and workload %s has no regions", t.Name, w.Name)
	}
	for _, r := range w.Regions {
		if _, ok := t.RegionURLs[r.Name]; !ok {
			return fmt.Errorf("target %s: no URL for region %s and no default URL", t.Name, r.Name)
		}
	}
	return nil
}

// endpointURL is where request r goes on this target.
func (t *Target) endpointURL(r *workload.Request) string {
	base := t.URL
	if u, ok := t.RegionURLs[r.Region]; ok {
		base = u
	}
	base = strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1")
	if r.Endpoint == workload.Completions {
		return base + "/v1/completions"
	}
	return base + "/v1/chat/completions"
}
