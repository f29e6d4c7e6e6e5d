package scrape_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scrape"
)

// FuzzParseModels feeds arbitrary /v1/models answers (a pod's bytes): whatever is accepted has a
// base model, names no empty adapter, serves every name it lists, and reads back the same from
// the list it describes (base first, then each adapter with the base as parent).
func FuzzParseModels(f *testing.F) {
	f.Add([]byte(vllmModels))
	f.Add([]byte(`{"data":[{"id":"a","parent":"a"},{"id":"x","parent":"a"}]}`))
	f.Add([]byte(`{"data":[{"id":"x","parent":"a"},{"id":"a"},{"id":""},{"id":"a-alias","parent":null}]}`))
	f.Add([]byte(`{"object":"list","data":[{"id":"a","root":"a","parent":"","max_model_len":131072}]}`))
	f.Add([]byte(`{"data":[{"id":"x","parent":"a"}]}`))
	f.Add([]byte(`{"data":null} trailing`))
	f.Add([]byte(`[{"id":"a"}]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := scrape.ParseModels(bytes.NewReader(body))
		if err != nil {
			return
		}
		if m.Base == "" || slices.Contains(m.Adapters, "") {
			t.Fatalf("accepted %q as base %q, adapters %q", body, m.Base, m.Adapters)
		}
		for _, name := range append([]string{m.Base}, m.Adapters...) {
			if !m.Serves(name) {
				t.Fatalf("lists %q but does not serve it", name)
			}
		}
		again, err := scrape.ParseModels(bytes.NewReader(renderModels(t, m.Base, m.Adapters)))
		if err != nil || again.Base != m.Base || !slices.Equal(again.Adapters, m.Adapters) {
			t.Fatalf("round trip of %q %q: %+v, %v", m.Base, m.Adapters, again, err)
		}
	})
}

// renderModels writes a vLLM-style /v1/models answer: the base, then adapters with it as parent.
func renderModels(t *testing.T, base string, adapters []string) []byte {
	type card struct {
		ID     string  `json:"id"`
		Root   string  `json:"root"`
		Parent *string `json:"parent"`
	}
	list := struct {
		Object string `json:"object"`
		Data   []card `json:"data"`
	}{Object: "list", Data: []card{{ID: base, Root: base}}}
	for _, a := range adapters {
		list.Data = append(list.Data, card{ID: a, Root: base, Parent: &base})
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
