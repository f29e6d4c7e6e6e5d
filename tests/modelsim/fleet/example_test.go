package fleet_test

import (
	"fmt"
	"strings"

	"github.com/switchyard-dev/switchyard/tests/modelsim/fleet"
)

func ExampleParse() {
	cfgs, err := fleet.Parse(strings.NewReader(`
- listen: 127.0.0.1:8001
  profile: h100
  model: llama
  lora: [sql, chat]
  max-loras: 2
- listen: 127.0.0.1:8002
  profile: a10g
  model: llama
  engine: sglang
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cfgs {
		fmt.Println(c.Listen, c.Profile, c.Model, c.LoRAs, c.EffectiveMaxLoras(), c.Engine)
	}
	// Output:
	// 127.0.0.1:8001 h100 llama [sql chat] 2 vllm
	// 127.0.0.1:8002 a10g llama [] 0 sglang
}
