package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/switchyard-dev/switchyard/contract/poll"
)

// waitServing polls a gateway's OpenAI model list at modelsURL until it names a model, or until
// timeout or the process's exit. A gateway answers /healthz at once and /readyz once a pod's
// metrics are in, but routes a model only after it has read the pod's /v1/models too: a request
// sent in between is refused with 404 model_not_found.
func (p *Process) waitServing(ctx context.Context, modelsURL string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	err := poll.Wait(ctx, func(ctx context.Context) error {
		n, err := modelCount(ctx, client, modelsURL)
		if err == nil && n == 0 {
			err = errors.New("no model listed")
		}
		if err != nil {
			return p.unlessExited("it served a model", err)
		}
		return nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%s served no model after %v (GET %s); see %s", p.Name, timeout, modelsURL, p.LogPath)
	}
	return err
}

// modelCount returns how many models an OpenAI /v1/models answer lists.
func modelCount(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return 0, fmt.Errorf("GET %s: %w", url, err)
	}
	return len(list.Data), nil
}
