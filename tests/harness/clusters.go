package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// WaitClusters polls a router's admin API (Connect protocol, JSON) until it lists want clusters
// fresh and with ready pods: a gateway's first summaries, published before it has read what its
// pods serve, list no model, and a run started then would send its first requests elsewhere.
func WaitClusters(ctx context.Context, admin, token string, want int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	fresh := 0
	err := poll.Wait(ctx, func(ctx context.Context) error {
		fresh = len(ServingClusters(ctx, admin, token))
		if fresh < want {
			return fmt.Errorf("%d of %d clusters fresh and serving", fresh, want)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d clusters fresh and serving after %v", fresh, want, timeout)
	}
	return nil
}

// ServingClusters returns the names of the clusters a router's admin API (Connect protocol,
// JSON, at admin) lists fresh and with ready pods for a model; none when it cannot be asked.
func ServingClusters(ctx context.Context, admin, token string) map[string]bool {
	client := &http.Client{Timeout: 2 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		admin+"/switchyard.admin.v1.AdminService/ListClusters", bytes.NewReader([]byte("{}")))
	if err != nil {
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Clusters []struct {
			Name   string `json:"name"`
			Stale  bool   `json:"stale"`
			Models []struct {
				ReadyPods      int `json:"readyPods"`
				ReadyPodsSnake int `json:"ready_pods"`
			} `json:"models"`
		} `json:"clusters"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
		return nil
	}
	out := map[string]bool{}
	for _, c := range body.Clusters {
		serving := false
		for _, m := range c.Models {
			serving = serving || m.ReadyPods > 0 || m.ReadyPodsSnake > 0
		}
		if !c.Stale && serving {
			out[c.Name] = true
		}
	}
	return out
}
