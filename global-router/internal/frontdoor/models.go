package frontdoor

import (
	"encoding/json"
	"net/http"
	"sort"
)

// ModelLister returns the models served by fresh clusters.
type ModelLister interface {
	Models() []string
}

// serveModels answers GET /v1/models with the union of what fresh clusters serve.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	if ml, ok := s.table.(ModelLister); ok {
		names := ml.Models()
		sort.Strings(names)
		for _, n := range names {
			out.Data = append(out.Data, model{ID: n, Object: "model", OwnedBy: "switchyard"})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
