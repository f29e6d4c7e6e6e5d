package openai_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/contract/openai"
)

func TestErrorJSON(t *testing.T) {
	type candidate struct {
		Cluster    string          `json:"cluster"`
		ReasonCode contract.Reason `json:"reason_code"`
	}
	type candidates struct {
		Candidates []candidate `json:"candidates,omitempty"`
	}
	tests := []struct {
		name string
		e    openai.Error
		want string
	}{
		{
			"param and code",
			openai.Error{
				Message: "no model",
				Type:    openai.TypeInvalidRequest,
				Param:   "model",
				Code:    contract.ReasonInvalidRequest,
			},
			`{"error":{"message":"no model","type":"invalid_request_error","param":"model","code":"invalid_request"}}`,
		},
		{
			"param null when empty",
			openai.Error{Message: "saturated", Type: openai.TypeRateLimit, Code: contract.ReasonOverloaded},
			`{"error":{"message":"saturated","type":"rate_limit_error","param":null,"code":"overloaded"}}`,
		},
		{"code null when empty", openai.Error{Message: "x", Type: openai.TypeServiceUnavailable},
			`{"error":{"message":"x","type":"service_unavailable","param":null,"code":null}}`},
		{"quotes, control bytes and HTML escaped", openai.Error{Message: "a \"b\"\n<c>&\x00", Type: "t"},
			`{"error":{"message":"a \"b\"\n\u003cc\u003e\u0026\u0000","type":"t","param":null,"code":null}}`},
		{"invalid UTF-8 becomes U+FFFD", openai.Error{Message: "bad \xff", Type: "t"},
			`{"error":{"message":"bad \ufffd","type":"t","param":null,"code":null}}`},
		{
			"extra members after code",
			openai.Error{Message: "m", Type: "t", Code: contract.ReasonResidencyPolicy,
				Extra: candidates{[]candidate{{"east", contract.ReasonRegionNotAllowed}}}},
			`{"error":{"message":"m","type":"t","param":null,"code":"residency_policy","candidates":[{"cluster":"east","reason_code":"region_not_allowed"}]}}`,
		},
		{"extra with no members", openai.Error{Message: "m", Type: "t", Extra: candidates{}},
			`{"error":{"message":"m","type":"t","param":null,"code":null}}`},
		{"extra that is not an object", openai.Error{Message: "m", Type: "t", Extra: []int{1}},
			`{"error":{"message":"m","type":"t","param":null,"code":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.e.JSON()); got != tt.want {
				t.Fatalf("JSON() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestErrorWrite(t *testing.T) {
	tests := []struct {
		name       string
		e          openai.Error
		retryAfter string
		overflow   bool
	}{
		{
			"plain",
			openai.Error{
				Status:  http.StatusBadRequest,
				Type:    openai.TypeInvalidRequest,
				Code:    contract.ReasonBadRequest,
				Message: "m",
			},
			"",
			false,
		},
		{
			"retry after",
			openai.Error{
				Status:            http.StatusServiceUnavailable,
				Type:              openai.TypeServiceUnavailable,
				Code:              contract.ReasonPolicyUnavailable,
				RetryAfterSeconds: openai.RetryAfter(1500 * time.Millisecond),
			},
			"2",
			false,
		},
		{
			"overflow",
			openai.Error{Status: http.StatusTooManyRequests, Type: openai.TypeRateLimit, Code: contract.ReasonNoCapacity,
				RetryAfterSeconds: 1, Overflow: true},
			"1",
			true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			tt.e.Write(w)
			if w.Code != tt.e.Status || w.Header().Get("Content-Type") != "application/json" ||
				w.Header().Get("Retry-After") != tt.retryAfter || contract.IsOverflow(w.Header()) != tt.overflow {
				t.Fatalf("status %d headers %v", w.Code, w.Header())
			}
			if got, want := w.Body.String(), string(tt.e.JSON())+"\n"; got != want {
				t.Fatalf("body %q, want %q", got, want)
			}
			if h := tt.e.Headers(); h.Get("Retry-After") != tt.retryAfter || contract.IsOverflow(h) != tt.overflow {
				t.Fatalf("Headers() = %v", h)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	e := &openai.Error{Status: 404, Code: contract.ReasonModelNotFound, Message: "no such model"}
	var err error = e
	if err.Error() != "404 model_not_found: no such model" {
		t.Fatalf("Error() = %q", err.Error())
	}
}

// FuzzErrorJSON: any message and param bytes give one valid JSON object whose fields decode back
// to what was given (invalid UTF-8 as U+FFFD), with param null exactly when it is empty.
func FuzzErrorJSON(f *testing.F) {
	f.Add("the model `x` does not exist", "model")
	f.Add("", "")
	f.Add("\"}}\x00\xff<script>", "\u2028")
	f.Add(strings.Repeat("\\", 100), "a\"b")
	f.Fuzz(func(t *testing.T, msg, param string) {
		e := openai.Error{Message: msg, Param: param, Type: openai.TypeInvalidRequest, Code: contract.ReasonBadRequest,
			Extra: map[string]string{"note": msg}}
		b := e.JSON()
		if !json.Valid(b) {
			t.Fatalf("invalid JSON: %q", b)
		}
		var doc struct {
			Error struct {
				Message string          `json:"message"`
				Type    string          `json:"type"`
				Param   *string         `json:"param"`
				Code    contract.Reason `json:"code"`
				Note    string          `json:"note"`
			} `json:"error"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		got := doc.Error
		if got.Message != valid(msg) || got.Note != valid(msg) || got.Type != openai.TypeInvalidRequest ||
			got.Code != contract.ReasonBadRequest {
			t.Fatalf("decoded %+v from %q", got, b)
		}
		if (got.Param == nil) != (param == "") || got.Param != nil && *got.Param != valid(param) {
			t.Fatalf("param %v from %q", got.Param, param)
		}
	})
}

// valid is s as encoding/json writes it: each invalid byte as U+FFFD.
func valid(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r) // RuneError for an invalid byte
		i += n
	}
	return b.String()
}
