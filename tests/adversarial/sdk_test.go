package adversarial

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestResponsesAPIWithOfficialSDK is the Responses API's control, as OpenAI's own Go SDK reads
// it: client.Responses.New and client.Responses.NewStreaming, through a router and straight to
// a gateway, get the simulated model's text and usage with the routing decision's headers; the
// gateway meters each answer; and a route neither tier serves (Responses.Get: responses are not
// stored) comes back as a 404 the SDK decodes as an API error. A body with an ambiguous model
// is refused on the new route as on the others.
func TestResponsesAPIWithOfficialSDK(t *testing.T) {
	w := newWorld(t)
	gw := w.Gateway("adv-sdk", "us-east-1", []string{w.Pod("h100").Listen})
	router := w.Router("us-east-1", "")
	waitModels(t, router, harness.TestModel)

	params := responses.ResponseNewParams{
		Model:           harness.TestModel,
		Instructions:    openai.String("Answer briefly."),
		MaxOutputTokens: openai.Int(8),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("hello there", responses.EasyInputMessageRoleUser),
		}},
	}
	tiers := []struct {
		name    string
		addr    string
		headers []string // decision headers every answer carries
	}{
		{"router", router.Listen, []string{contract.HeaderCluster, contract.HeaderRegion, contract.HeaderRoute}},
		{"gateway", gw.Listen, []string{contract.HeaderCluster, contract.HeaderRegion, contract.HeaderEndpoint}},
	}
	for _, tier := range tiers {
		client := openai.NewClient(option.WithBaseURL("http://"+tier.addr+"/v1/"), option.WithAPIKey("unused"),
			option.WithMaxRetries(0), option.WithRequestTimeout(60*time.Second))
		t.Run(tier.name+"/New", func(t *testing.T) {
			var raw *http.Response
			resp, err := client.Responses.New(context.Background(), params, option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			checkDecision(t, raw.Header, tier.headers)
			checkAnswer(t, resp.OutputText(), resp.Usage)
		})
		t.Run(tier.name+"/NewStreaming", func(t *testing.T) {
			var raw *http.Response
			stream := client.Responses.NewStreaming(context.Background(), params, option.WithResponseInto(&raw))
			defer stream.Close()
			var text strings.Builder
			var completed *responses.Response
			var types []string
			for stream.Next() {
				ev := stream.Current()
				types = append(types, ev.Type)
				switch ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.completed":
					completed = &ev.Response
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if completed == nil || types[0] != "response.created" {
				t.Fatalf("events %v: want response.created first and a response.completed", types)
			}
			if completed.OutputText() != text.String() {
				t.Fatalf("deltas %q, completed response's text %q", text.String(), completed.OutputText())
			}
			checkDecision(t, raw.Header, tier.headers)
			checkAnswer(t, text.String(), completed.Usage)
		})
		t.Run(tier.name+"/ambiguous model", func(t *testing.T) {
			// The ambiguity rules hold on the new route: a model a case-folding reader would take
			// from "Model" is refused, naming the key.
			body := `{"model":"` + harness.TestModel + `","Model":"elsewhere","input":"hi"}`
			resp, err := http.Post("http://"+tier.addr+"/v1/responses", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error struct{ Param string } `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).
				Decode(&e); err != nil || resp.StatusCode != http.StatusBadRequest ||
				e.Error.Param != "model" {
				t.Fatalf("answer %d (%+v, %v), want 400 naming model", resp.StatusCode, e, err)
			}
		})
		t.Run(tier.name+"/unknown route", func(t *testing.T) {
			_, err := client.Responses.Get(context.Background(), "resp_1", responses.ResponseGetParams{})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Type != "invalid_request_error" ||
				!strings.Contains(apiErr.Message, "/v1/responses/resp_1") {
				t.Fatalf("GET /v1/responses/resp_1: %v, want a 404 invalid_request_error naming the path", err)
			}
		})
	}
	// Every answer (two through the router, two straight) was metered by the gateway as served.
	if n := harness.MetricValue(
		t,
		gw.Metrics,
		"switchyard_gateway_requests_total",
		"model="+harness.TestModel,
		"code=200",
	); n != 4 {
		t.Fatalf("the gateway counted %v served requests, want 4", n)
	}
	if n := harness.MetricValue(
		t,
		gw.Metrics,
		"switchyard_gateway_ttft_seconds_count",
		"model="+harness.TestModel,
	); n != 4 {
		t.Fatalf("the gateway measured %v first tokens, want 4", n)
	}
}

// checkDecision fails t unless every one of the decision headers is set.
func checkDecision(t *testing.T, h http.Header, names []string) {
	t.Helper()
	for _, name := range names {
		if h.Get(name) == "" {
			t.Errorf("answer without %s (headers %v)", name, h)
		}
	}
}

// checkAnswer fails t unless the text and usage are the simulated model's: 8 output tokens of
// four characters (max_output_tokens), and input tokens counted.
func checkAnswer(t *testing.T, text string, u responses.ResponseUsage) {
	t.Helper()
	if len(text) != 8*4 || u.OutputTokens != 8 || u.InputTokens == 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Fatalf("text %q, usage %+v: want 8 tokens of text and counted usage", text, u)
	}
}
