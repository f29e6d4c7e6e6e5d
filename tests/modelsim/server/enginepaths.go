package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard-dev/switchyard/tests/modelsim/textgen"
)

// The engine paths beyond the OpenAI API that vLLM serves and the routers pass through:
// detokenize, rerank, score, pooling, classify and audio. Their answers have vLLM's shapes with
// deterministic content (scores from the simulated embeddings' cosine similarity, a transcript
// drawn from the audio's length); they do not go through the batching engine.

// registerEnginePaths adds the engine paths to mux.
func (s *Server) registerEnginePaths(mux *http.ServeMux) {
	mux.HandleFunc("POST /detokenize", s.handleDetokenize)
	for _, p := range []string{"/rerank", "/v1/rerank", "/v2/rerank"} {
		mux.HandleFunc("POST "+p, s.handleRerank)
	}
	for _, p := range []string{"/score", "/v1/score"} {
		mux.HandleFunc("POST "+p, s.handleScore)
	}
	mux.HandleFunc("POST /pooling", s.handlePooling)
	mux.HandleFunc("POST /classify", s.handleClassify)
	mux.HandleFunc("POST /v1/audio/transcriptions", s.handleAudio)
	mux.HandleFunc("POST /v1/audio/translations", s.handleAudio)
}

// decodeFor reads a JSON body into v and checks that its model is served here.
func (s *Server) decodeFor(w http.ResponseWriter, r *http.Request, v any, model func() string) *apiError {
	body, apiErr := s.readBody(w, r)
	if apiErr != nil {
		return apiErr
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("", "Invalid JSON body: %v", err)
	}
	return s.checkModel(model())
}

// checkModel accepts the base model, an adapter, or no model (vLLM's default).
func (s *Server) checkModel(m string) *apiError {
	if m != "" && m != s.cfg.Model && !s.adapters[m] {
		return notFound(m)
	}
	return nil
}

// answer writes v as JSON, or e.
func answer(w http.ResponseWriter, v any, e *apiError) {
	if e != nil {
		writeError(w, e)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// handleDetokenize answers vLLM's /detokenize: {"prompt": text} for {"tokens": [...]}.
func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string  `json:"model"`
		Tokens []int64 `json:"tokens"`
	}
	if e := s.decodeFor(w, r, &req, func() string { return req.Model }); e != nil {
		writeError(w, e)
		return
	}
	words := make([]string, len(req.Tokens))
	for i, id := range req.Tokens {
		words[i] = textgen.NewGenerator(s.cfg.Seed, strconv.FormatInt(id, 10)).Token(0)
	}
	answer(w, map[string]string{"prompt": strings.Join(words, "")}, nil)
}

// textList reads a string or an array of strings.
func textList(raw json.RawMessage, field string) ([]string, *apiError) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return many, nil
	}
	return nil, badRequest(field, "Field '%s' must be a string or a non-empty list of strings.", field)
}

// similarity is the cosine similarity of a's and b's simulated embeddings, in [-1, 1].
func (s *Server) similarity(a, b string) float64 {
	va, vb := embed(s.cfg.Seed, a), embed(s.cfg.Seed, b)
	var dot float64
	for i := range va {
		dot += va[i] * vb[i]
	}
	return dot
}

// tokenUsage is the usage of texts: their tokens, as modelsim counts them.
func tokenUsage(texts ...string) usage {
	n := 0
	for _, t := range texts {
		n += textgen.CountTokens(t)
	}
	return usage{PromptTokens: n, TotalTokens: n}
}

type rerankResult struct {
	Index          int               `json:"index"`
	Document       map[string]string `json:"document"`
	RelevanceScore float64           `json:"relevance_score"`
}

// handleRerank answers vLLM's rerank API (Jina and Cohere shape): the documents by relevance to
// the query, best first, at most top_n.
func (s *Server) handleRerank(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model     string   `json:"model"`
		Query     string   `json:"query"`
		Documents []string `json:"documents"`
		TopN      int      `json:"top_n"`
	}
	if e := s.decodeFor(w, r, &req, func() string { return req.Model }); e != nil {
		writeError(w, e)
		return
	}
	if req.Query == "" || len(req.Documents) == 0 {
		writeError(w, badRequest("documents", "Fields 'query' and 'documents' are required."))
		return
	}
	results := make([]rerankResult, len(req.Documents))
	for i, d := range req.Documents {
		results[i] = rerankResult{Index: i, Document: map[string]string{"text": d},
			RelevanceScore: (s.similarity(req.Query, d) + 1) / 2}
	}
	slices.SortStableFunc(results, func(a, b rerankResult) int { return cmpDesc(a.RelevanceScore, b.RelevanceScore) })
	if req.TopN > 0 && req.TopN < len(results) {
		results = results[:req.TopN]
	}
	answer(w, map[string]any{"id": "rerank-" + s.cfg.Model, "model": s.modelOr(req.Model),
		"usage":   map[string]int{"total_tokens": tokenUsage(append(req.Documents, req.Query)...).TotalTokens},
		"results": results}, nil)
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// modelOr is m, or the base model when m is empty.
func (s *Server) modelOr(m string) string {
	if m == "" {
		return s.cfg.Model
	}
	return m
}

// handleScore answers vLLM's score API: text_1 against each of text_2 (or pairwise).
func (s *Server) handleScore(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string          `json:"model"`
		Text1 json.RawMessage `json:"text_1"`
		Text2 json.RawMessage `json:"text_2"`
	}
	if e := s.decodeFor(w, r, &req, func() string { return req.Model }); e != nil {
		writeError(w, e)
		return
	}
	t1, e := textList(req.Text1, "text_1")
	if e == nil {
		var t2 []string
		if t2, e = textList(req.Text2, "text_2"); e == nil {
			v, e := s.scores(req.Model, t1, t2)
			answer(w, v, e)
			return
		}
	}
	writeError(w, e)
}

// scores pairs one text_1 with every text_2, or each text_1 with its text_2.
func (s *Server) scores(model string, t1, t2 []string) (any, *apiError) {
	if len(t1) != 1 && len(t1) != len(t2) {
		return nil, badRequest("text_1", "text_1 must hold one text or as many as text_2.")
	}
	data := make([]map[string]any, len(t2))
	for i, b := range t2 {
		a := t1[0]
		if len(t1) > 1 {
			a = t1[i]
		}
		data[i] = map[string]any{"index": i, "object": "score", "score": (s.similarity(a, b) + 1) / 2}
	}
	return map[string]any{"id": "score-" + s.cfg.Model, "object": "list", "model": s.modelOr(model),
		"data": data, "usage": tokenUsage(append(t1, t2...)...)}, nil
}

// handlePooling answers vLLM's /pooling: the pooled hidden state of each input (the simulated
// embedding).
func (s *Server) handlePooling(w http.ResponseWriter, r *http.Request) {
	s.perInput(w, r, func(i int, text string) map[string]any {
		return map[string]any{"index": i, "object": "pooling", "data": embed(s.cfg.Seed, text)}
	})
}

// classLabels are the simulated classifier's classes.
var classLabels = []string{"negative", "positive"}

// handleClassify answers vLLM's /classify: a label and class probabilities per input.
func (s *Server) handleClassify(w http.ResponseWriter, r *http.Request) {
	s.perInput(w, r, func(i int, text string) map[string]any {
		v := embed(s.cfg.Seed, text)
		p := 1 / (1 + math.Exp(-4*(v[1]-v[0]))) // of the second class
		probs := []float64{1 - p, p}
		label := classLabels[0]
		if p >= 0.5 {
			label = classLabels[1]
		}
		return map[string]any{"index": i, "label": label, "probs": probs, "num_classes": len(classLabels)}
	})
}

// perInput answers a list of one item per input (a string or a list of strings).
func (s *Server) perInput(w http.ResponseWriter, r *http.Request, item func(i int, text string) map[string]any) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if e := s.decodeFor(w, r, &req, func() string { return req.Model }); e != nil {
		writeError(w, e)
		return
	}
	inputs, e := textList(req.Input, "input")
	if e != nil {
		writeError(w, e)
		return
	}
	data := make([]map[string]any, len(inputs))
	for i, t := range inputs {
		data[i] = item(i, t)
	}
	answer(w, map[string]any{"id": "pool-" + s.cfg.Model, "object": "list", "model": s.modelOr(req.Model),
		"data": data, "usage": tokenUsage(inputs...)}, nil)
}

// audioBytesPerWord is how much audio modelsim transcribes as one word (about 16 kHz 16-bit
// PCM at two words a second).
const audioBytesPerWord = 16_000

// handleAudio answers vLLM's transcription and translation APIs: a multipart form with the
// audio "file" and the "model" (and optional "language", "prompt", "response_format",
// "temperature"); the transcript's length follows the audio's, its words are drawn from its
// bytes. response_format "text" answers plain text, anything else JSON {"text": ...}.
func (s *Server) handleAudio(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	mr, err := r.MultipartReader()
	if err != nil {
		writeError(w, badRequest("file", "Expected a multipart/form-data body: %v", err))
		return
	}
	form, apiErr := readAudioForm(mr)
	if apiErr == nil {
		apiErr = s.checkModel(form.model)
	}
	if apiErr == nil && form.audio == 0 {
		apiErr = badRequest("file", "Field 'file' is required.")
	}
	if apiErr != nil {
		writeError(w, apiErr)
		return
	}
	words := max(1, int(form.audio/audioBytesPerWord))
	g := textgen.NewGenerator(s.cfg.Seed, fmt.Sprintf("%d:%x", form.audio, form.sum))
	text := strings.TrimSpace(string(g.AppendText(nil, 0, words)))
	if form.format == "text" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, text)
		return
	}
	answer(w, map[string]any{"text": text, "usage": map[string]any{"type": "duration",
		"seconds": float64(form.audio) / 32_000}}, nil)
}

// audioForm is what a transcription form carries.
type audioForm struct {
	model, format string
	audio         int64  // bytes of the file
	sum           uint64 // a digest of the file's bytes
}

// readAudioForm reads the form's fields, counting the file's bytes without keeping them.
func readAudioForm(mr *multipart.Reader) (audioForm, *apiError) {
	var f audioForm
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return f, tooLarge(tooBig.Limit)
		}
		if err != nil {
			return f, badRequest("", "Malformed multipart body: %v", err)
		}
		if p.FormName() == "file" {
			n, sum, err := digest(p)
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				return f, tooLarge(tooBig.Limit)
			}
			if err != nil {
				return f, badRequest("file", "Reading the file failed: %v", err)
			}
			f.audio, f.sum = n, sum
			continue
		}
		v, err := io.ReadAll(io.LimitReader(p, 4<<10))
		if err != nil {
			return f, badRequest("", "Malformed multipart body: %v", err)
		}
		switch p.FormName() {
		case "model":
			f.model = string(v)
		case "response_format":
			f.format = string(v)
		}
	}
}

// digest reads r to its end, returning its length and FNV-1a digest.
func digest(r io.Reader) (int64, uint64, error) {
	h := fnv.New64a()
	n, err := io.Copy(h, r)
	return n, h.Sum64(), err
}
