package frontdoor

import "github.com/switchyard-dev/switchyard/contract/openai"

// parseRequest reads an OpenAI request body with openai.Parse: the same reading the gateways
// make, so both tiers see the same model and hash the same prompt blocks. Its Prompt (completions'
// prompt, chat messages' contents, or embeddings' input) may alias body (appending to it copies).
func parseRequest(body []byte) (openai.Body, *openai.Error) {
	var b openai.Body
	if err := openai.Parse(body, &b); err != nil {
		return openai.Body{}, badRequest(openai.Describe(err))
	}
	return b, nil
}
