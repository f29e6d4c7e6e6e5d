package devstack

import (
	"fmt"
	"io"
	"path/filepath"
)

// printSummary tells the user where everything is and what to paste.
func (s *Stack) printSummary() {
	w := s.opt.Out
	if w == nil {
		w = io.Discard
	}
	fmt.Fprintf(
		w,
		"\nSwitchyard local stack is up (model %s). Logs: %s\n\n",
		s.cfg.Model,
		filepath.Join(s.opt.DataDir, "logs"),
	)
	var first string
	for _, r := range s.cfg.Regions {
		fmt.Fprintf(w, "region %s: router http://%s (admin %s)\n", r.Name, r.Router.Listen, r.Router.Admin)
		for _, c := range r.Clusters {
			fmt.Fprintf(w, "  cluster %-8s gateway %s  pods %v\n", c.Name, s.Gateways[c.Name], s.Pods[c.Name])
			if first == "" {
				first = s.Gateways[c.Name]
			}
		}
	}
	r0 := s.cfg.Regions[0]
	fmt.Fprintf(
		w,
		"\nTry a streamed completion through the %s router (headers show the serving cluster and route):\n\n",
		r0.Name,
	)
	fmt.Fprintf(w, "  curl -sN http://%s/v1/completions -H 'Content-Type: application/json' \\\n", r0.Router.Listen)
	fmt.Fprintf(
		w,
		"    -d '{\"model\":%q,\"prompt\":\"Say hello\",\"max_tokens\":20,\"stream\":true}' -D -\n\n",
		s.cfg.Model,
	)
	fmt.Fprintf(w, "or straight to a cluster gateway: %s/v1/completions\n\n", first)
	fmt.Fprintf(w, "See the clusters as the router sees them:\n\n")
	ctl := "go run ./global-router/cmd/switchyardctl"
	if s.opt.BinDir != "" {
		ctl = filepath.Join(s.opt.BinDir, "switchyardctl")
	}
	fmt.Fprintf(w, "  %s --addr=http://%s --token-file=%s clusters\n", ctl, r0.Router.Admin, s.tokenFile)
	fmt.Fprintf(
		w,
		"  %s --addr=http://%s --token-file=%s drain-region %s   # watch traffic overflow\n\n",
		ctl,
		r0.Router.Admin,
		s.tokenFile,
		r0.Name,
	)
	fmt.Fprintf(w, "Press Ctrl-C to stop everything.\n")
}
