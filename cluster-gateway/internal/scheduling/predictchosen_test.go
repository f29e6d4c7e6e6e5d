package scheduling_test

import (
	"context"
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/plugins/plugintest"
	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scheduling"
	"github.com/switchyard-dev/switchyard/gossip/prefix"
)

// PredictChosen predicts on the chosen endpoint with the prefix the cache holds there: a prompt
// sent before is predicted sooner than the same prompt uncached (PredictTTFT) in the same state.
// Profiles without a predicted-ttft-scorer predict nothing.
func TestPredictChosenCountsTheCachedPrefix(t *testing.T) {
	ctx := context.Background()
	e := plugintest.Endpoint("10.0.0.1:80", "m", 0, 0, 0, plugintest.Epoch)
	prompt := make([]byte, 16000)
	for i := range prompt {
		prompt[i] = byte('a' + i%26)
	}
	req := func() *framework.Request {
		return &framework.Request{
			Model:        "m",
			BaseModel:    "m",
			PromptTokens: 4000,
			PrefixHashes: prefix.Hashes(nil, "m", prompt, 0),
		}
	}
	s := newScheduler(t, "default", plugintest.NewHandle(e))
	first := req()
	res, err := s.Schedule(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	cold, ok := s.PredictChosen(first, res)
	uncached, _ := s.PredictTTFT(e, 4000)
	if !ok || cold != uncached {
		t.Fatalf("first request predicted %v, %v; want %v as uncached", cold, ok, uncached)
	}
	s.PreRequest(ctx, first, res) // the pod now holds the prompt's blocks

	second := req()
	res, err = s.Schedule(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	warm, ok := s.PredictChosen(second, res)
	uncached, _ = s.PredictTTFT(e, 4000)
	s.Discard(res)
	if !ok || warm >= uncached {
		t.Fatalf("repeated prompt predicted %v, %v; want below %v uncached", warm, ok, uncached)
	}
	if res.State != nil {
		t.Error("Discard kept the cycle state")
	}

	g := newScheduler(t, "gie-default", plugintest.NewHandle(e))
	r := req()
	res, err = g.Schedule(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := g.PredictChosen(r, res); ok {
		t.Errorf("gie-default predicted %v", d)
	}
	g.Discard(res)
}

// Every request that gets its first token from the pod it was sent to adds measured / predicted
// TTFT to switchyard_gateway_ttft_prediction_ratio, once (not again at the end of the response).
func TestPredictionRatioObserved(t *testing.T) {
	ctx := context.Background()
	e := plugintest.Endpoint("10.0.0.1:80", "m", 0, 0, 0, plugintest.Epoch)
	h := plugintest.NewHandle(e)
	cfg := scheduling.DefaultConfig()
	cfg.Profile, cfg.Now = "default", h.Now
	reg := prometheus.NewPedanticRegistry()
	s, err := scheduling.New(cfg, h, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	req := &framework.Request{Model: "m", BaseModel: "m", PromptTokens: 1000}
	res, err := s.Schedule(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	predicted, _ := s.PredictChosen(req, res)
	s.PreRequest(ctx, req, res)
	measured := 2 * predicted
	info := &framework.ResponseInfo{
		Endpoint:     e,
		Status:       200,
		TTFT:         measured,
		CachedTokens: -1,
		PromptTokens: 1000,
		OutputTokens: 1,
	}
	s.FirstToken(ctx, req, info)
	info.OutputTokens = 20
	s.PostResponse(ctx, req, info)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "switchyard_gateway_ttft_prediction_ratio" {
			continue
		}
		hist := mf.GetMetric()[0].GetHistogram()
		if hist.GetSampleCount() != 1 || math.Abs(hist.GetSampleSum()-2) > 1e-6 {
			t.Fatalf("ratio histogram: %d samples summing to %v, want 1 of 2", hist.GetSampleCount(), hist.GetSampleSum())
		}
		return
	}
	t.Fatal("switchyard_gateway_ttft_prediction_ratio not registered")
}
