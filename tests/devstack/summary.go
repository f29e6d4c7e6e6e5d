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
	fmt.Fprintf(w, "\nSwitchyard local stack is up (model %s). Logs: %s\n\n", s.cfg.Model, filepath.Join(s.opt.DataDir, "logs"))
	var first string
	for _, r := range s.cfg.Regions {
		fmt.Fprintf(w, "region %s\n", r.Name)
		for _, c := range r.Clusters {
			fmt.Fprintf(w, "  cluster %-8s gateway %s  pods %v\n", c.Name, s.Gateways[c.Name], s.Pods[c.Name])
			if first == "" {
				first = s.Gateways[c.Name]
			}
		}
	}
	fmt.Fprintf(w, "\nTry a streamed completion through a cluster gateway:\n\n")
	fmt.Fprintf(w, "  curl -sN %s/v1/completions -H 'Content-Type: application/json' \\\n", first)
	fmt.Fprintf(w, "    -d '{\"model\":%q,\"prompt\":\"Say hello\",\"max_tokens\":20,\"stream\":true}' -D -\n\n", s.cfg.Model)
	fmt.Fprintf(w, "Press Ctrl-C to stop everything.\n")
}
