package frontdoor

import "github.com/switchyard-dev/switchyard/contract/openai"

// parseRequest returns the model and the prompt text (completions' prompt, chat messages'
// contents, or embeddings' input) of an OpenAI request body, read by openai.Parse: the same
// reading the gateways make, so both tiers see the same model and hash the same prompt blocks.
// It also returns the body's session id (metadata.session_id, else user; nil for none). The text
// and the session id may alias body (appending to them copies).
func parseRequest(body []byte) (model string, prompt, sessionID []byte, _ *openai.Error) {
	var b openai.Body
	if err := openai.Parse(body, &b); err != nil {
		return "", nil, nil, badRequest(openai.Describe(err))
	}
	return b.Model, b.Prompt, b.SessionID, nil
}
