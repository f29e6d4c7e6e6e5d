package server

import (
	"encoding/json"
	"net/http"
)

// modelCard is one entry of /v1/models in vLLM's shape.
type modelCard struct {
	ID          string       `json:"id"`
	Object      string       `json:"object"`
	Created     int64        `json:"created"`
	OwnedBy     string       `json:"owned_by"`
	Root        string       `json:"root"`
	Parent      *string      `json:"parent"`
	MaxModelLen int          `json:"max_model_len"`
	Permission  []permission `json:"permission"`
}

type permission struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Created            int64   `json:"created"`
	AllowCreateEngine  bool    `json:"allow_create_engine"`
	AllowSampling      bool    `json:"allow_sampling"`
	AllowLogprobs      bool    `json:"allow_logprobs"`
	AllowSearchIndices bool    `json:"allow_search_indices"`
	AllowView          bool    `json:"allow_view"`
	AllowFineTuning    bool    `json:"allow_fine_tuning"`
	Organization       string  `json:"organization"`
	Group              *string `json:"group"`
	IsBlocking         bool    `json:"is_blocking"`
}

type modelList struct {
	Object string      `json:"object"`
	Data   []modelCard `json:"data"`
}

// handleModels lists the base model and its adapters; an adapter's parent is the base model and
// its root the adapter's (simulated) path.
func (s *Server) handleModels(w http.ResponseWriter, _ *http.Request) {
	list := modelList{Object: "list", Data: []modelCard{s.card(s.cfg.Model, s.cfg.Model, nil)}}
	base := s.cfg.Model
	for _, a := range s.cfg.LoRAs {
		list.Data = append(list.Data, s.card(a, "/adapters/"+a, &base))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func (s *Server) card(id, root string, parent *string) modelCard {
	return modelCard{
		ID: id, Object: "model", Created: s.created, OwnedBy: "vllm", Root: root, Parent: parent,
		MaxModelLen: s.cfg.MaxModelLen,
		Permission: []permission{{
			ID: "modelperm-" + id, Object: "model_permission", Created: s.created,
			AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
		}},
	}
}
