package frontdoor

import (
	"bytes"
	"io"
	"net/http"

	"github.com/switchyard-dev/switchyard/contract/openai"
)

// readBody reads the whole body, refusing more than limit bytes with 413. A body of known length
// is read into one buffer of exactly its size.
func readBody(r *http.Request, limit int64) ([]byte, *apiError) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	if r.ContentLength > 0 {
		return readKnown(r.Body, int(r.ContentLength))
	}
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, badRequest("reading request body: "+err.Error(), "")
	}
	if n > limit {
		return nil, tooLarge(limit)
	}
	return buf.Bytes(), nil
}

// readKnown reads a body that declared n bytes. net/http refuses a body longer than its
// Content-Length, so the read ends at n or with an error.
func readKnown(body io.Reader, n int) ([]byte, *apiError) {
	buf := make([]byte, n)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, badRequest("reading request body: "+err.Error(), "")
	}
	return buf, nil
}

// parseRequest returns the model and the prompt text (completions' prompt, chat messages'
// contents, or embeddings' input) of an OpenAI request body, read by openai.Parse: the same
// reading the gateways make, so both tiers see the same model and hash the same prompt blocks.
// The text may alias body (appending to it copies).
func parseRequest(body []byte) (string, []byte, *apiError) {
	var b openai.Body
	if err := openai.Parse(body, &b); err != nil {
		return "", nil, badRequest(openai.Describe(err))
	}
	return b.Model, b.Prompt, nil
}
