package server

import (
	"encoding/json"
	"math"
	"net/http"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

// embeddingDims is the length of the simulated embedding vectors.
const embeddingDims = 16

type embeddingRequest struct {
	Model string          `json:"model"`
	Input json.RawMessage `json:"input"`
}

type embeddingResponse struct {
	Object string          `json:"object"`
	Model  string          `json:"model"`
	Data   []embeddingData `json:"data"`
	Usage  usage           `json:"usage"`
}

type embeddingData struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float64 `json:"embedding"`
}

// handleEmbeddings serves /v1/embeddings: the input runs through the engine as a prefill (one
// step's worth of output), and the answer is a deterministic unit vector.
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	model, ereq, apiErr := s.prepareEmbedding(w, r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	arrival := s.clock.Now()
	if s.clock.Sleep(r.Context(), s.engine.APIOverhead(ereq.PromptTokens)) != nil {
		return
	}
	h, err := s.engine.Submit(ereq, arrival)
	if err != nil {
		writeError(w, badRequest("input", "%v", err))
		return
	}
	p, ok := s.wait(r, h)
	if !ok {
		return
	}
	n := ereq.PromptTokens
	resp := embeddingResponse{Object: "list", Model: model,
		Data:  []embeddingData{{Object: "embedding", Embedding: embed(s.cfg.Seed, string(ereq.Prompt))}},
		Usage: usage{PromptTokens: n, TotalTokens: n, PromptTokensDetails: details(s.cfg.ReportCachedTokens, p)}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}

func (s *Server) prepareEmbedding(w http.ResponseWriter, r *http.Request) (string, engine.Request, *apiError) {
	body, apiErr := s.readBody(w, r)
	if apiErr != nil {
		return "", engine.Request{}, apiErr
	}
	var req embeddingRequest
	if err := json.Unmarshal(body, &req); err != nil || req.Model == "" {
		return "", engine.Request{}, badRequest("", "Invalid embeddings request: want JSON with 'model' and 'input'.")
	}
	adapter := ""
	if req.Model != s.cfg.Model {
		if !s.adapters[req.Model] {
			return "", engine.Request{}, notFound(req.Model)
		}
		adapter = req.Model
	}
	text, ids, err := promptText(req.Input)
	if err != nil {
		return "", engine.Request{}, err.(*apiError)
	}
	tokens := len(ids)
	if tokens == 0 {
		tokens = textgen.CountTokens(text)
	}
	ereq := engine.Request{Model: req.Model, Adapter: adapter, Prompt: []byte(text), PromptTokens: tokens, MaxTokens: 1}
	if tokens == 0 || tokens >= s.cfg.MaxModelLen || s.engine.Check(ereq) != nil {
		return "", engine.Request{}, badRequest(
			"input",
			"The input of %d tokens is empty or too long for this model.",
			tokens,
		)
	}
	return req.Model, ereq, nil
}

// embed returns a deterministic unit vector for text.
func embed(seed uint64, text string) []float64 {
	g := textgen.NewGenerator(seed, text)
	v := make([]float64, embeddingDims)
	var norm float64
	for i := range v {
		v[i] = g.Float(i)
		norm += v[i] * v[i]
	}
	for i := range v {
		v[i] /= math.Sqrt(norm)
	}
	return v
}
