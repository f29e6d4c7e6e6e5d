package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

// handleGenerate serves /v1/completions (chat=false) and /v1/chat/completions (chat=true).
func (s *Server) handleGenerate(chat bool) http.HandlerFunc {
	parse := func(body []byte) (*genRequest, error) { return parseRequest(body, chat) }
	return func(w http.ResponseWriter, r *http.Request) {
		req, ereq, apiErr := s.prepare(w, r, parse)
		if apiErr != nil {
			writeError(w, apiErr)
			return
		}
		if req.remoteDecode {
			s.pd.forRemote.Inc()
		}
		if peer := prefillPeer(r.Header); peer != "" {
			if apiErr := s.remotePrefill(r, req, peer, &ereq); apiErr != nil {
				writeError(w, apiErr)
				return
			}
		}
		s.generate(w, r, req, ereq)
	}
}

// generate runs a prepared request on the engine and answers it in its API's shape, streaming
// or not.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, req *genRequest, ereq engine.Request) {
	arrival := s.clock.Now()
	if err := s.clock.Sleep(r.Context(), s.engine.APIOverhead(ereq.PromptTokens)); err != nil {
		return // client gone
	}
	h, err := s.engine.Submit(ereq, arrival)
	if err != nil {
		writeError(w, badRequest("", "%v", err))
		return
	}
	out := s.newOutput(req, h)
	s.log.Debug("request admitted", "id", out.id, "model", req.model,
		"prompt_tokens", req.promptTokens, "max_tokens", ereq.MaxTokens, "stream", req.stream, "responses", req.responses)
	switch {
	case req.responses && req.stream:
		s.streamResponse(w, r, out)
	case req.responses:
		s.respondResponse(w, r, out)
	case req.stream:
		s.stream(w, r, out)
	default:
		s.respond(w, r, out)
	}
}

// prepare reads a request, parses it with parse and builds the engine's view of it.
func (s *Server) prepare(
	w http.ResponseWriter,
	r *http.Request,
	parse func([]byte) (*genRequest, error),
) (*genRequest, engine.Request, *apiError) {
	body, apiErr := s.readBody(w, r)
	if apiErr != nil {
		return nil, engine.Request{}, apiErr
	}
	parsed, err := parse(body)
	if err != nil {
		return nil, engine.Request{}, err.(*apiError)
	}
	req, ereq, apiErr := s.cfg.engineRequestOf(parsed)
	if apiErr != nil {
		return nil, engine.Request{}, apiErr
	}
	if err := s.engine.Check(ereq); err != nil {
		return nil, engine.Request{}, badRequest("", "%v", err)
	}
	return req, ereq, nil
}

// readBody reads the request body up to Config.MaxBodyBytes (413 beyond).
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *apiError) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, tooLarge(s.cfg.MaxBodyBytes)
		}
		return nil, badRequest("", "Cannot read the request body: %v", err)
	}
	return body, nil
}

// output renders one request's response.
type output struct {
	req     *genRequest
	h       *engine.Handle
	gen     textgen.Generator
	id      string
	created int64
	head    []byte // the JSON chunk prefix up to the choices
	// reportCached: usage carries prompt_tokens_details.cached_tokens (Config.ReportCachedTokens).
	reportCached bool
}

func (s *Server) newOutput(req *genRequest, h *engine.Handle) *output {
	o := &output{req: req, h: h, gen: textgen.NewGenerator(s.cfg.Seed, req.prompt), created: time.Now().Unix(),
		reportCached: s.cfg.ReportCachedTokens}
	prefix, object := "cmpl-", "text_completion"
	switch {
	case req.responses:
		prefix = "resp_"
	case req.chat:
		prefix, object = "chatcmpl-", "chat.completion.chunk"
	}
	o.id = prefix + strconv.FormatUint(s.cfg.Seed, 16) + "-" + strconv.FormatUint(s.ids.Add(1), 10)
	model, _ := json.Marshal(req.model)
	o.head = append(o.head, `{"id":"`+o.id+`","object":"`+object+`","created":`...)
	o.head = strconv.AppendInt(o.head, o.created, 10)
	o.head = append(o.head, `,"model":`...)
	o.head = append(o.head, model...)
	return o
}

// usage is the OpenAI usage object with vLLM's prompt_tokens_details, which is null when the
// server does not report cached tokens (vLLM without --enable-prompt-tokens-details).
type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func (o *output) usage(p engine.Progress) usage {
	return usage{PromptTokens: o.req.promptTokens, CompletionTokens: p.Generated,
		TotalTokens:         o.req.promptTokens + p.Generated,
		PromptTokensDetails: details(o.reportCached, p)}
}

// details returns a request's prompt_tokens_details: its cached tokens, or nil (JSON null) when
// the server does not report them.
func details(report bool, p engine.Progress) *promptDetails {
	if !report {
		return nil
	}
	return &promptDetails{CachedTokens: p.CachedTokens}
}

// wait blocks until the request is done or the client went away (then it cancels the request).
func (s *Server) wait(r *http.Request, h *engine.Handle) (engine.Progress, bool) {
	for {
		p := h.Progress()
		if p.Done {
			return p, true
		}
		select {
		case <-h.Notify():
		case <-r.Context().Done():
			s.engine.Cancel(h)
			return p, false
		}
	}
}
