package preciseprefix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/switchyard-dev/switchyard/contract"
)

// Why the scorer fell back to the approximate prefix-cache-scorer, the reason label of
// switchyard_gateway_precise_prefix_decisions_total (with mode "approximate").
const (
	reasonNoTokenizer   = "no_tokenizer"
	reasonNoBody        = "no_body"
	reasonTooLarge      = "too_large"
	reasonUnsupported   = "unsupported_prompt"
	reasonTokenizeError = "tokenize_failed"
	reasonBackoff       = "tokenizer_backoff"
	reasonPrecise       = "matched"
)

// schemeKey is the CycleState key under which Score leaves how it scored the cycle's request
// (a *scheme), for PreRequest to put in the result.
const schemeKey = Type + "/scheme"

// scheme is one x-switchyard-prefix-scoring value, rendered once.
type scheme struct{ header string }

// schemes are the values Score can leave, by reason.
var schemes = func() map[string]*scheme {
	m := map[string]*scheme{reasonPrecise: {contract.FormatPrefixScoring(contract.PrefixScoringPrecise, "")}}
	for _, r := range []string{reasonNoTokenizer, reasonNoBody, reasonTooLarge, reasonUnsupported,
		reasonTokenizeError, reasonBackoff} {
		m[r] = &scheme{contract.FormatPrefixScoring(contract.PrefixScoringApproximate, r)}
	}
	return m
}()

// promptFields are the members of an OpenAI completion or chat completion body that decide its
// prompt's tokens; they are passed to vLLM's /tokenize as they came.
type promptFields struct {
	Prompt               json.RawMessage `json:"prompt,omitempty"`
	Messages             json.RawMessage `json:"messages,omitempty"`
	Tools                json.RawMessage `json:"tools,omitempty"`
	ChatTemplate         json.RawMessage `json:"chat_template,omitempty"`
	ChatTemplateKwargs   json.RawMessage `json:"chat_template_kwargs,omitempty"`
	AddGenerationPrompt  json.RawMessage `json:"add_generation_prompt,omitempty"`
	ContinueFinalMessage json.RawMessage `json:"continue_final_message,omitempty"`
	AddSpecialTokens     json.RawMessage `json:"add_special_tokens,omitempty"`
}

// tokenizeRequest is the body sent to /tokenize: the prompt fields and the model.
type tokenizeRequest struct {
	Model string `json:"model"`
	promptFields
}

type tokenizeResponse struct {
	Tokens json.RawMessage `json:"tokens"`
}

// maxAnswerBytes bounds a /tokenize answer to a request body of n bytes: at most 8 bytes of JSON
// per byte of prompt (a token covers at least one byte, and an id with its comma takes at most
// 8), plus 64 KiB for the chat template's tokens and the other members. A pod cannot make the
// gateway read megabytes for a short prompt.
func maxAnswerBytes(n int) int64 { return 8*int64(n) + 64<<10 }

var errUnsupported = errors.New("prompt is neither a string, token ids nor messages")

// tokenizeBody builds the /tokenize body for a request body, or returns the prompt's token ids
// when the body gives them directly.
func tokenizeBody(model string, body []byte) (req []byte, ids []int64, err error) {
	var f promptFields
	if err := json.Unmarshal(body, &f); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errUnsupported, err)
	}
	switch {
	case len(f.Messages) > 0:
		f.Prompt = nil
	case len(f.Prompt) > 0 && f.Prompt[0] == '"':
		f.Messages, f.Tools, f.ChatTemplate, f.ChatTemplateKwargs = nil, nil, nil, nil
	case len(f.Prompt) > 0 && f.Prompt[0] == '[':
		if err := json.Unmarshal(f.Prompt, &ids); err == nil {
			return nil, ids, nil
		}
		return nil, nil, errUnsupported // a batch of prompts
	default:
		return nil, nil, errUnsupported
	}
	out, err := json.Marshal(tokenizeRequest{Model: model, promptFields: f})
	return out, nil, err
}

// tokenize posts body to url (a vLLM /tokenize endpoint) and returns the first maxTokens token
// ids (the hashes chain no further), reading at most maxAnswerBytes(len(body)) of the answer.
func tokenize(ctx context.Context, c *http.Client, url string, body []byte, maxTokens int) ([]int64, error) {
	maxResp := maxAnswerBytes(len(body))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tokenize %s: %w", url, err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tokenize %s: status %d", url, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResp+1))
	if err != nil {
		return nil, fmt.Errorf("tokenize %s: %w", url, err)
	}
	if int64(len(data)) > maxResp {
		return nil, fmt.Errorf("tokenize %s: answer over %d bytes", url, maxResp)
	}
	var tr tokenizeResponse
	if err := json.Unmarshal(data, &tr); err != nil {
		return nil, fmt.Errorf("tokenize %s: %w", url, err)
	}
	ids, err := firstTokens(tr.Tokens, maxTokens)
	if err != nil {
		return nil, fmt.Errorf("tokenize %s: %w", url, err)
	}
	return ids, nil
}

// firstTokens decodes at most limit ids of a JSON array of integers (already validated JSON), so
// a long answer costs no more than the ids the scorer uses.
func firstTokens(raw json.RawMessage, limit int) ([]int64, error) {
	p := bytes.TrimSpace(raw)
	if len(p) == 0 || p[0] != '[' {
		return nil, errors.New("tokens is not an array")
	}
	p = p[1:]
	ids := make([]int64, 0, min(limit, len(p)/2+1))
	for len(ids) < limit {
		p = bytes.TrimLeft(p, " \t\r\n,")
		if len(p) == 0 || p[0] == ']' {
			break
		}
		end := bytes.IndexAny(p, ", \t\r\n]")
		if end < 0 {
			end = len(p)
		}
		v, err := strconv.ParseInt(string(p[:end]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("token id %.20q is not an integer", p[:end])
		}
		ids = append(ids, v)
		p = p[end:]
	}
	return ids, nil
}
