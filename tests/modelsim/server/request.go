package server

import (
	"slices"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/kvevents"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

// minNaturalTokens is the shortest answer the simulated model gives before its end-of-sequence
// token, when a request sets no max_tokens and does not ignore EOS.
const minNaturalTokens = 16

// EngineRequest converts the body of an OpenAI completions (chat=false) or chat completions
// (chat=true) request into the request a server with this configuration hands its engine: model
// or adapter, prompt text (chat messages rendered with the template) and token count, output
// length and finish reason. It is what the HTTP handlers do, minus the engine's own check that the
// request fits its KV cache (engine.Engine.Check, which Submit runs). Offline simulations use it to
// build exactly the requests the served pods would run. Errors are those the API answers with 400
// (malformed body, context length exceeded) or 404 (unknown model).
func (c Config) EngineRequest(body []byte, chat bool) (engine.Request, error) {
	_, r, apiErr := c.engineRequest(body, chat)
	if apiErr != nil {
		return engine.Request{}, apiErr
	}
	return r, nil
}

// engineRequest parses body and builds the engine's view of it.
func (c Config) engineRequest(body []byte, chat bool) (*genRequest, engine.Request, *apiError) {
	req, err := parseRequest(body, chat)
	if err != nil {
		return nil, engine.Request{}, err.(*apiError)
	}
	return c.engineRequestOf(req)
}

// engineRequestOf builds the engine's view of a parsed request.
func (c Config) engineRequestOf(req *genRequest) (*genRequest, engine.Request, *apiError) {
	adapter := ""
	if req.model != c.Model {
		if !slices.Contains(c.LoRAs, req.model) {
			return nil, engine.Request{}, notFound(req.model)
		}
		adapter = req.model
	}
	maxTokens, reason, apiErr := c.outputLength(req)
	if apiErr != nil {
		return nil, engine.Request{}, apiErr
	}
	ereq := engine.Request{Model: req.model, Adapter: adapter, Prompt: []byte(req.prompt),
		PromptTokens: req.promptTokens, MaxTokens: maxTokens, FinishReason: reason}
	if c.KVEventsEndpoint != "" {
		ereq.TokenIDs = req.tokenIDs
		if ereq.TokenIDs == nil {
			ereq.TokenIDs = textgen.Tokenize(req.prompt)
		}
		ereq.BlockHashes = kvevents.BlockHashes(c.HashSeed, ereq.TokenIDs, profile.BlockSize, adapter)
	}
	return req, ereq, nil
}

// outputLength decides how many tokens to generate: max_tokens when set; otherwise the default
// bound (ignore_eos) or a natural answer length drawn from the seed and prompt (finish "stop").
func (c Config) outputLength(req *genRequest) (int, string, *apiError) {
	room := c.MaxModelLen - req.promptTokens
	if req.maxTokens > 0 && req.maxTokens > room || room < 1 {
		return 0, "", badRequest("", "This model's maximum context length is %d tokens. However, you "+
			"requested %d tokens (%d in the messages, %d in the completion). Please reduce the length "+
			"of the messages or completion.", c.MaxModelLen, req.promptTokens+max(req.maxTokens, 1),
			req.promptTokens, max(req.maxTokens, 1))
	}
	if req.maxTokens > 0 {
		return req.maxTokens, "length", nil
	}
	limit := min(c.DefaultMaxTokens, room)
	if req.ignoreEOS {
		return limit, "length", nil
	}
	g := textgen.NewGenerator(c.Seed, req.prompt)
	return g.Length(min(minNaturalTokens, limit), limit), "stop", nil
}
