package openai

// EventType returns the top-level "type" string of one SSE event's data, where a Responses API
// stream event names itself ("response.created", "response.output_text.delta", ...), read in
// one pass with the body scanner. It returns nil when there is none (a chat completions chunk),
// when "type" is not a string, or when data is not one valid JSON object; of duplicate "type"
// members the last one counts. The result aliases data when the string has no escapes.
func EventType(data []byte) []byte {
	s := scanner{data: data}
	if s.ws() != '{' {
		return nil
	}
	var typ []byte
	err := s.object(func(key []byte) error {
		if string(key) != "type" {
			return s.skip(1)
		}
		typ = nil
		if s.ws() != '"' {
			return s.skip(1)
		}
		v, err := s.str(nil)
		typ = v
		return err
	})
	if err != nil || s.end() != nil {
		return nil
	}
	return typ
}
