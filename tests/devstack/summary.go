package devstack

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// printSummary tells the user, on one screen, where everything is and what to paste: every
// region's router (OpenAI endpoint, admin API, capacity map) with its clusters' gateways and
// pods, how to log in to the map, two curl commands and the switchyardctl command line.
func (s *Stack) printSummary() {
	w := s.opt.Out
	if w == nil {
		w = io.Discard
	}
	fmt.Fprintf(w, "\nSwitchyard local stack is up: model %s, logs in %s\n\n", s.cfg.Model,
		filepath.Join(s.opt.DataDir, "logs"))
	for _, r := range s.cfg.Regions {
		fmt.Fprintf(w, "%s  router http://%s  admin http://%s  map %s\n", r.Name, r.Router.Listen, r.Router.Admin,
			mapURL(r))
		for _, c := range r.Clusters {
			pods := make([]string, len(s.Pods[c.Name]))
			for i, p := range s.Pods[c.Name] {
				pods[i] = "http://" + p
			}
			fmt.Fprintf(w, "  %-8s gateway %s  pods %s\n", c.Name, s.Gateways[c.Name], strings.Join(pods, " "))
		}
	}
	r0 := s.cfg.Regions[0]
	fmt.Fprintf(w, "\nCapacity map: open %s and log in with the admin token in %s\n", mapURL(r0), s.tokenFile)
	fmt.Fprintf(w, "(every router of the stack accepts it: cat %s)\n\n", s.tokenFile)
	fmt.Fprintf(w, "A streamed completion through the %s router (the headers name the cluster and route):\n", r0.Name)
	fmt.Fprintf(w, "  curl -sN http://%s/v1/completions -H 'Content-Type: application/json' -D - \\\n", r0.Router.Listen)
	fmt.Fprintf(w, "    -d '{\"model\":%q,\"prompt\":\"Say hello\",\"max_tokens\":20,\"stream\":true}'\n", s.cfg.Model)
	fmt.Fprintf(w, "The clusters as the router sees them (admin API, Connect JSON):\n")
	fmt.Fprintf(w, "  curl -s http://%s/switchyard.admin.v1.AdminService/ListClusters -d '{}' \\\n", r0.Router.Admin)
	fmt.Fprintf(w, "    -H 'Content-Type: application/json' -H \"Authorization: Bearer $(cat %s)\"\n", s.tokenFile)
	ctl := "go run ./global-router/cmd/switchyardctl"
	if s.opt.BinDir != "" {
		ctl = filepath.Join(s.opt.BinDir, "switchyardctl")
	}
	fmt.Fprintf(w, "Drain a region and watch its traffic overflow on the map:\n")
	fmt.Fprintf(w, "  %s --addr=http://%s --token-file=%s drain-region %s\n\n", ctl, r0.Router.Admin, s.tokenFile,
		r0.Name)
	fmt.Fprintf(w, "Press Ctrl-C to stop everything.\n")
}

// mapURL is the capacity map of a region's router.
func mapURL(r Region) string { return "http://" + r.Router.Admin + "/map/" }
