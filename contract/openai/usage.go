package openai

// Usage is the usage block of a response (completions, chat completions or embeddings).
type Usage struct {
	// PromptTokens is usage.prompt_tokens (0 when null or absent).
	PromptTokens int
	// CompletionTokens is usage.completion_tokens (0 when null or absent).
	CompletionTokens int
	// CachedTokens is usage.prompt_tokens_details.cached_tokens, when HasCached.
	CachedTokens int
	// HasCached says the server reported cached_tokens (most engines do not).
	HasCached bool
}

// ParseUsage reads the top-level "usage" object of a JSON response or of one SSE event's data with
// the body scanner (one pass, skipping the rest without decoding it). ok is false when there is no usage
// object or the payload is not valid JSON or a count is not a non-negative integer or null.
func ParseUsage(data []byte) (u Usage, ok bool) {
	s := scanner{data: data}
	if s.ws() != '{' {
		return Usage{}, false
	}
	err := s.object(func(key []byte) error {
		if string(key) != "usage" {
			return s.skip(1)
		}
		if s.ws() == 'n' {
			u, ok = Usage{}, false
			return s.literal("null")
		}
		u, ok = Usage{}, true
		return s.object(func(key []byte) error { return u.member(&s, key) })
	})
	if err != nil || s.end() != nil {
		return Usage{}, false
	}
	return u, ok
}

// member reads one member of the usage object.
func (u *Usage) member(s *scanner, key []byte) error {
	switch string(key) {
	case "prompt_tokens":
		return s.count(&u.PromptTokens)
	case "completion_tokens":
		return s.count(&u.CompletionTokens)
	case "prompt_tokens_details":
		if s.ws() == 'n' {
			u.HasCached = false
			return s.literal("null")
		}
		return s.object(func(key []byte) error {
			if string(key) != "cached_tokens" {
				return s.skip(3)
			}
			u.HasCached = s.ws() != 'n'
			return s.count(&u.CachedTokens)
		})
	}
	return s.skip(2)
}
