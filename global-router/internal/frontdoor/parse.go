package frontdoor

import "github.com/switchyard-dev/switchyard/contract/openai"

// parseRequest returns the model and the prompt text (completions' prompt, chat messages'
// contents, or embeddings' input) of an OpenAI request body, read by openai.Parse: the same
// reading the gateways make, so both tiers see the same model and hash the same prompt blocks.
// The text may alias body (appending to it copies).
func parseRequest(body []byte) (string, []byte, *openai.Error) {
	var b openai.Body
	if err := openai.Parse(body, &b); err != nil {
		return "", nil, badRequest(openai.Describe(err))
	}
	return b.Model, b.Prompt, nil
}
