package adversarial

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard-dev/switchyard/contract"
	"github.com/switchyard-dev/switchyard/tests/harness"
)

// TestPassthroughPathsEndToEnd runs the engine pass-through paths through the real binaries:
// router → gateway → modelsim for /tokenize, /v1/rerank and /v1/audio/transcriptions (the last
// with OpenAI's Go SDK, whose form puts the file before the model), each routed to a cluster
// serving the model named; and per pool: a pool whose gateway enables /tokenize only refuses
// /v1/rerank with 404, and a gateway lists only what its own pods serve.
func TestPassthroughPathsEndToEnd(t *testing.T) {
	t.Parallel() // correctness only, no timing: runs beside the suite's other parallel tests
	w := newWorld(t)
	gwA := w.Gateway("adv-pt-a", "us-east-1", []string{w.Pod("h100", "--lora=whisper-lora").Listen})
	gwB := w.Gateway("adv-pt-b", "us-west-2", []string{w.Pod("h100").Listen}, "--passthrough-paths=/tokenize=json")
	router := w.Router("us-east-1", "")
	waitModels(t, router, harness.TestModel, "whisper-lora")
	waitModels(t, gwB, harness.TestModel)

	t.Run("tokenize", func(t *testing.T) {
		status, h, body := postTo(t, "http://"+router.Listen+"/tokenize", "application/json",
			[]byte(`{"model":"`+harness.TestModel+`","prompt":"hello there"}`))
		var out struct{ Count int }
		if status != 200 || json.Unmarshal(body, &out) != nil || out.Count == 0 || h.Get(contract.HeaderCluster) == "" {
			t.Fatalf("tokenize: %d %s %v", status, body, h)
		}
	})
	t.Run("rerank", func(t *testing.T) {
		status, _, body := postTo(t, "http://"+router.Listen+"/v1/rerank", "application/json",
			[]byte(`{"model":"whisper-lora","query":"q","documents":["a","b"]}`))
		var out struct{ Results []struct{ Index int } }
		if status != 200 || json.Unmarshal(body, &out) != nil || len(out.Results) != 2 {
			t.Fatalf("rerank: %d %s", status, body)
		}
	})
	t.Run("transcription with the SDK", func(t *testing.T) {
		client := openai.NewClient(option.WithBaseURL("http://"+router.Listen+"/v1/"), option.WithAPIKey("unused"),
			option.WithMaxRetries(0), option.WithRequestTimeout(60*time.Second))
		audio := bytes.Repeat([]byte("RIFF-pcm-"), 40_000) // 360 KB
		var raw *http.Response
		resp, err := client.Audio.Transcriptions.New(context.Background(), openai.AudioTranscriptionNewParams{
			File:  openai.File(bytes.NewReader(audio), "speech.wav", "audio/wav"),
			Model: "whisper-lora",
		}, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		if len(strings.Fields(resp.Text)) < 2 || raw.Header.Get(contract.HeaderCluster) != "adv-pt-a" {
			t.Fatalf("transcript %q from cluster %q, want words from adv-pt-a (the only one serving the adapter)",
				resp.Text, raw.Header.Get(contract.HeaderCluster))
		}
	})
	t.Run("duplicate model field", func(t *testing.T) {
		data, ctype := twoModels(t)
		for _, tier := range []*harness.Node{router, gwA} {
			status, _, body := postTo(t, "http://"+tier.Listen+"/v1/audio/transcriptions", ctype, data)
			if status != 400 || !strings.Contains(string(body), "twice") {
				t.Errorf("%s: %d %s, want 400 naming the second model field", tier.Listen, status, body)
			}
		}
	})
	t.Run("per pool", func(t *testing.T) {
		if status, _, body := postTo(t, "http://"+gwB.Listen+"/v1/rerank", "application/json",
			[]byte(`{"model":"`+harness.TestModel+`","query":"q","documents":["a"]}`)); status != 404 ||
			!strings.Contains(string(body), "Invalid URL") {
			t.Errorf("rerank on a pool without it: %d %s, want 404", status, body)
		}
		if status, _, body := postTo(t, "http://"+gwB.Listen+"/tokenize", "application/json",
			[]byte(`{"model":"`+harness.TestModel+`","prompt":"x"}`)); status != 200 {
			t.Errorf("tokenize on its pool: %d %s", status, body)
		}
		_, listB := getStatus(t, "http://"+gwB.Listen+"/v1/models")
		_, listA := getStatus(t, "http://"+gwA.Listen+"/v1/models")
		if strings.Contains(listB, "whisper-lora") || !strings.Contains(listA, "whisper-lora") {
			t.Errorf("models: pool A %s, pool B %s; want the adapter listed by A only", listA, listB)
		}
	})
}

// postTo posts data with the given Content-Type and returns the answer.
func postTo(t *testing.T, url, ctype string, data []byte) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(url, ctype, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

// twoModels is a transcription form naming a model before its audio and another after it.
func twoModels(t *testing.T) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("model", harness.TestModel)
	fw, _ := mw.CreateFormFile("file", "a.wav")
	_, _ = fw.Write(bytes.Repeat([]byte("pcm"), 100_000))
	_ = mw.WriteField("model", "whisper-lora")
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes(), mw.FormDataContentType()
}
