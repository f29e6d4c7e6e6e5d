package pipelinetest

// ResponsesStream is a streaming Responses API exchange that both front doors route and meter
// the same way: scheduled by Body's model (Model), Body passed on unchanged, the first token
// taken at the first delta (Events[1], not Events[0], response.created) and the usage from
// response.completed (the last event).
var ResponsesStream = ResponsesCase{
	Model: "llama",
	Body: `{"model":"llama","stream":true,"instructions":"be brief",` +
		`"input":[{"role":"user","content":[{"type":"input_text","text":"hello"}]}],"max_output_tokens":8}`,
	Events: []string{
		"event: response.created\n" +
			"data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"usage\":null}}\n\n",
		"event: response.output_text.delta\n" +
			"data: {\"type\":\"response.output_text.delta\",\"delta\":\"hi\"}\n\n",
		"event: response.output_text.delta\n" +
			"data: {\"type\":\"response.output_text.delta\",\"delta\":\" there\"}\n\n",
		"event: response.completed\n" +
			"data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\"," +
			"\"usage\":{\"input_tokens\":12,\"input_tokens_details\":{\"cached_tokens\":8},\"output_tokens\":2," +
			"\"total_tokens\":14}}}\n\n",
	},
	Text:         "hi there",
	PromptTokens: 12,
	CachedTokens: 8,
	OutputTokens: 2,
}

// ResponsesCase is a Responses API request, the server-sent events a model server answers it
// with, and what the meter must read from them.
type ResponsesCase struct {
	// Model is the model the request is scheduled by.
	Model string
	// Body is the request body.
	Body string
	// Events are the answer's events, in order, each one write of the model server.
	Events []string
	// Text is the answer's text: the deltas, joined.
	Text string
	// PromptTokens, CachedTokens and OutputTokens are the usage the meter reports.
	PromptTokens, CachedTokens, OutputTokens int
}
