package openai

// Usage is the usage block of a response (completions, chat completions, embeddings or
// responses). The Responses API's names are read into the same fields: input_tokens as
// PromptTokens, output_tokens as CompletionTokens, input_tokens_details.cached_tokens as
// CachedTokens.
type Usage struct {
	// PromptTokens is usage.prompt_tokens or usage.input_tokens (0 when null or absent).
	PromptTokens int
	// CompletionTokens is usage.completion_tokens or usage.output_tokens (0 when null or absent).
	CompletionTokens int
	// CachedTokens is usage.prompt_tokens_details.cached_tokens (or
	// input_tokens_details.cached_tokens), when HasCached.
	CachedTokens int
	// HasCached says the server reported cached_tokens (most engines do not).
	HasCached bool
}

// ParseUsage reads the usage object of a JSON response or of one SSE event's data with the body
// scanner (one pass, skipping the rest without decoding it): the top-level "usage", or the
// "usage" of a top-level "response" object (a Responses API stream event such as
// response.completed carries the response, and its usage, there); when a payload has both, the
// last one wins, and a null one means none. ok is false when there is no usage object or the
// payload is not valid JSON or a count is not a non-negative integer or null. Where a name and
// its Responses API alias (prompt_tokens and input_tokens, say) both appear, the last one wins.
func ParseUsage(data []byte) (u Usage, ok bool) {
	s := scanner{data: data}
	if s.ws() != '{' {
		return Usage{}, false
	}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "usage":
			return u.read(&s, &ok)
		case "response":
			if s.ws() != '{' {
				return s.skip(1)
			}
			return s.object(func(key []byte) error {
				if string(key) != "usage" {
					return s.skip(2)
				}
				return u.read(&s, &ok)
			})
		}
		return s.skip(1)
	})
	if err != nil || s.end() != nil {
		return Usage{}, false
	}
	return u, ok
}

// read reads a usage object (or null, which sets ok false) into u.
func (u *Usage) read(s *scanner, ok *bool) error {
	*u = Usage{}
	if s.ws() == 'n' {
		*ok = false
		return s.literal("null")
	}
	*ok = true
	return s.object(func(key []byte) error { return u.member(s, key) })
}

// member reads one member of the usage object.
func (u *Usage) member(s *scanner, key []byte) error {
	switch string(key) {
	case "prompt_tokens", "input_tokens":
		return s.count(&u.PromptTokens)
	case "completion_tokens", "output_tokens":
		return s.count(&u.CompletionTokens)
	case "prompt_tokens_details", "input_tokens_details":
		u.CachedTokens, u.HasCached = 0, false // the last details object counts
		if s.ws() == 'n' {
			return s.literal("null")
		}
		return s.object(func(key []byte) error {
			if string(key) != "cached_tokens" {
				return s.skip(4)
			}
			u.HasCached = s.ws() != 'n'
			return s.count(&u.CachedTokens)
		})
	}
	return s.skip(3)
}
