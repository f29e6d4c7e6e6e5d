package server

import (
	"encoding/json"
	"net/http"

	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

// tokenizeRequest is vLLM's /tokenize body: a completion prompt or chat messages (whose
// template modelsim renders as for a chat completion); other fields (tools, chat_template,
// add_generation_prompt, ...) are accepted and ignored, as modelsim's template has no options.
type tokenizeRequest struct {
	Model    string          `json:"model"`
	Prompt   json.RawMessage `json:"prompt"`
	Messages []wireMessage   `json:"messages"`
}

// tokenizeResponse is vLLM's answer.
type tokenizeResponse struct {
	Count       int      `json:"count"`
	MaxModelLen int      `json:"max_model_len"`
	Tokens      []int64  `json:"tokens"`
	TokenStrs   []string `json:"token_strs"`
}

// handleTokenize answers POST /tokenize with the token ids modelsim counts for the prompt
// (textgen.Tokenize): the ids its prefix cache hashes, so a gateway that hashes them the way
// vLLM does finds the blocks this server reports in its KV events.
func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	body, apiErr := s.readBody(w, r)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	var req tokenizeRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, badRequest("", "Invalid JSON body: %v", err))
		return
	}
	if req.Model != "" && req.Model != s.cfg.Model && !s.adapters[req.Model] {
		writeError(w, notFound(req.Model))
		return
	}
	ids, apiErr := tokenizeIDs(req)
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	out, _ := json.Marshal(tokenizeResponse{Count: len(ids), MaxModelLen: s.cfg.MaxModelLen, Tokens: ids})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func tokenizeIDs(req tokenizeRequest) ([]int64, *apiError) {
	if len(req.Messages) > 0 {
		text, err := renderMessages(req.Messages)
		if err != nil {
			return nil, err.(*apiError)
		}
		return textgen.Tokenize(text), nil
	}
	text, ids, err := promptText(req.Prompt)
	if err != nil {
		return nil, err.(*apiError)
	}
	if ids != nil {
		return ids, nil
	}
	return textgen.Tokenize(text), nil
}
