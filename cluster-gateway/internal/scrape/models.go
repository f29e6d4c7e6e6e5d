package scrape

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/datastore"
)

// modelList is the OpenAI /v1/models answer, with vLLM's root and parent fields.
type modelList struct {
	Data []modelCard `json:"data"`
}

type modelCard struct {
	ID     string  `json:"id"`
	Root   string  `json:"root"`
	Parent *string `json:"parent"`
}

// ParseModels decodes a /v1/models body. The base model is the first entry with no parent (or a
// parent equal to its own id); adapters are entries whose parent is another model. Further
// parentless entries are aliases of the base (vLLM's several served model names) and are listed
// with the adapters, so that requests naming them are routed to the pod.
func ParseModels(r io.Reader) (*datastore.Models, error) {
	var list modelList
	if err := json.NewDecoder(r).Decode(&list); err != nil {
		return nil, fmt.Errorf("scrape: decode models: %w", err)
	}
	m := &datastore.Models{}
	for _, c := range list.Data {
		if c.ID == "" {
			continue
		}
		base := c.Parent == nil || *c.Parent == "" || *c.Parent == c.ID
		if base && m.Base == "" {
			m.Base = c.ID
			continue
		}
		m.Adapters = append(m.Adapters, c.ID)
	}
	if m.Base == "" {
		return nil, errors.New("scrape: models list has no base model")
	}
	return m, nil
}

// refreshModels reads the pod's model list into the endpoint and reports success.
func (s *Scraper) refreshModels(ctx context.Context, ep *datastore.Endpoint, url string) bool {
	body, err := s.get(ctx, url, "application/json")
	if err != nil {
		s.failed(ctx, ep, kindModels, err)
		return false
	}
	defer closeBody(body)
	m, err := ParseModels(body)
	if err != nil {
		s.failed(ctx, ep, kindModels, fmt.Errorf("models %s: %w", url, err))
		return false
	}
	m.FetchedAt = time.Now()
	ep.SetModels(m)
	return true
}
