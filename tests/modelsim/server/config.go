package server

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/tests/modelsim/engine"
	"github.com/switchyard-dev/switchyard/tests/modelsim/kvevents"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
)

// Engine kinds: which inference server's metric names /metrics exports.
const (
	EngineVLLM   = "vllm"
	EngineSGLang = "sglang"
	EngineTRTLLM = "trtllm"
)

// Config configures one simulated model server. Flags and fleet files bind to the same fields.
type Config struct {
	// Listen is the address to serve on (host:port; port 0 picks a free port).
	Listen string
	// Profile names the simulated GPU (h100, a100, l40s, a10g).
	Profile string
	// Model is the base model name served.
	Model string
	// LoRAs are the adapter names served on top of the base model.
	LoRAs []string
	// MaxLoras is the number of adapter slots; negative selects the default: 1 when adapters are
	// configured (vLLM's default), else 0.
	MaxLoras int
	// TimeScale multiplies every simulated duration (0.1 runs ten times faster than real time).
	TimeScale float64
	// Seed makes generated text and step-time jitter reproducible.
	Seed uint64
	// Physics names the step-time model family (physics.Families: linear, blis, attention).
	Physics string
	// PhysicsJitter is the lognormal σ of step-time jitter; physics.FamilyDefaultJitter (-1) keeps
	// the family's own (linear: uniform ±2%; blis, attention: lognormal σ 0.03), 0 turns it off.
	PhysicsJitter float64
	// ReportCachedTokens makes usage carry prompt_tokens_details.cached_tokens; off, the details
	// are null, as most engines (vLLM without --enable-prompt-tokens-details) answer.
	ReportCachedTokens bool
	// Engine selects the metric names: vllm, sglang or trtllm.
	Engine string
	// MaxModelLen is the context length: prompt plus output tokens may not exceed it.
	MaxModelLen int
	// DefaultMaxTokens bounds the output when a request sets no max_tokens.
	DefaultMaxTokens int
	// MaxBodyBytes bounds a request body; larger bodies get 413.
	MaxBodyBytes int64
	// DrainTimeout bounds how long shutdown waits for in-flight requests (real time).
	DrainTimeout time.Duration
	// KVEventsEndpoint, when set, is the ZeroMQ SUB socket (tcp://HOST:PORT, the gateway's
	// --kv-events-endpoint) the server publishes its prefix cache's KV events to, as vLLM's
	// --kv-events-config does; the prefix cache is then keyed by vLLM's sha256_cbor block hashes
	// of the prompt's token ids (see /tokenize).
	KVEventsEndpoint string
	// KVEventsTopic is the events' topic; "" means kv@<bound address>@<model>.
	KVEventsTopic string
	// HashSeed is the simulated PYTHONHASHSEED: the root of the block-hash chain.
	HashSeed string
	// Role is the server's part in prefill/decode disaggregation (RoleBoth, RolePrefill,
	// RoleDecode). A decode or both server that receives x-prefiller-host-port has the prompt
	// prefilled there and pulls its KV cache (see remotePrefill); a prefill server ignores it.
	Role string
	// KVTransferPerToken is the simulated time to pull one prompt token's KV cache from the
	// prefill pod (scaled by TimeScale).
	KVTransferPerToken time.Duration
}

// Roles of Config.Role, as llm-d's llm-d.ai/role label names them.
const (
	RoleBoth    = "both"
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// DefaultConfig returns the defaults of the modelsim command.
func DefaultConfig() Config {
	return Config{
		Listen:             "127.0.0.1:8001", // the first port of a local fleet
		Profile:            "h100",           // the fastest GPU
		Model:              "meta-llama/Llama-3.1-8B-Instruct",
		MaxLoras:           -1,                          // 1 with adapters, else 0
		TimeScale:          1.0,                         // real time
		Seed:               1,                           // reproducible runs
		PhysicsJitter:      physics.FamilyDefaultJitter, // the family's own jitter
		Physics:            string(physics.Linear),      // the original model
		ReportCachedTokens: true,                        // the cached-token count of prompt_tokens_details
		Engine:             EngineVLLM,
		MaxModelLen:        131072,   // Llama-3.1's context length
		DefaultMaxTokens:   256,      // output bound without max_tokens
		MaxBodyBytes:       32 << 20, // 32 MiB, the gateway's limit
		DrainTimeout:       30 * time.Second,
		KVEventsEndpoint:   "", // no KV events
		KVEventsTopic:      "", // kv@<bound address>@<model>
		HashSeed:           "", // the root SHA-256(CBOR(""))
		Role:               RoleBoth,
		// Llama-3.1-8B holds 128 KiB of KV per token (32 layers × 8 KV heads × 128 × 2 × fp16);
		// NIXL over a 25 GB/s RDMA link moves it in about 5 µs.
		KVTransferPerToken: 5 * time.Microsecond,
	}
}

// EffectiveMaxLoras resolves the MaxLoras default.
func (c Config) EffectiveMaxLoras() int {
	switch {
	case c.MaxLoras >= 0:
		return c.MaxLoras
	case len(c.LoRAs) > 0:
		return 1
	default:
		return 0
	}
}

// Validate reports the first unusable field by name.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("listen %q: %w", c.Listen, err)
	}
	if _, err := profile.Lookup(c.Profile); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if err := c.physics().Validate(); err != nil {
		return fmt.Errorf("physics: %w", err)
	}
	if strings.TrimSpace(c.Model) == "" {
		return errors.New("model: must not be empty")
	}
	if err := c.validateAdapters(); err != nil {
		return err
	}
	if !(c.TimeScale > 0) || c.TimeScale > 1000 {
		return fmt.Errorf("time-scale: %v must be in (0, 1000]", c.TimeScale)
	}
	switch c.Engine {
	case EngineVLLM, EngineSGLang, EngineTRTLLM:
	default:
		return fmt.Errorf("engine: %q must be vllm, sglang or trtllm", c.Engine)
	}
	switch {
	case c.MaxModelLen < 1:
		return fmt.Errorf("max-model-len: %d must be >= 1", c.MaxModelLen)
	case c.DefaultMaxTokens < 1:
		return fmt.Errorf("default max tokens: %d must be >= 1", c.DefaultMaxTokens)
	case c.MaxBodyBytes < 1:
		return fmt.Errorf("max body bytes: %d must be >= 1", c.MaxBodyBytes)
	case c.DrainTimeout < 0:
		return fmt.Errorf("drain timeout: %v must be >= 0", c.DrainTimeout)
	case c.KVTransferPerToken < 0:
		return fmt.Errorf("kv-transfer-per-token: %v must be >= 0", c.KVTransferPerToken)
	}
	switch c.Role {
	case RoleBoth, RolePrefill, RoleDecode:
	default:
		return fmt.Errorf("role: %q must be both, prefill or decode", c.Role)
	}
	return c.validateKVEvents()
}

func (c Config) validateKVEvents() error {
	if c.KVEventsEndpoint == "" {
		if c.KVEventsTopic != "" {
			return errors.New("kv-events-topic: needs kv-events-endpoint")
		}
		return nil
	}
	if _, err := kvevents.DialAddr(c.KVEventsEndpoint); err != nil {
		return fmt.Errorf("kv-events-endpoint: %w", err)
	}
	if c.KVEventsTopic == "" {
		if host, _, _ := net.SplitHostPort(c.Listen); host == "" || net.ParseIP(host).IsUnspecified() {
			return errors.New("kv-events-topic: required when listening on every address " +
				"(the topic kv@<pod-ip>@<model> names the pod)")
		}
		return nil
	}
	cfg := kvevents.DefaultConfig()
	cfg.Endpoint, cfg.Topic = c.KVEventsEndpoint, c.KVEventsTopic
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("kv-events-topic: %w", err)
	}
	return nil
}

func (c Config) validateAdapters() error {
	seen := map[string]bool{c.Model: true}
	for _, a := range c.LoRAs {
		if strings.TrimSpace(a) == "" || strings.Contains(a, ",") {
			return fmt.Errorf("lora: invalid adapter name %q", a)
		}
		if seen[a] {
			return fmt.Errorf("lora: %q listed twice or equal to the model name", a)
		}
		seen[a] = true
	}
	if c.MaxLoras > 0 && c.MaxLoras > 1024 {
		return fmt.Errorf("max-loras: %d is too large", c.MaxLoras)
	}
	if len(c.LoRAs) > 0 && c.EffectiveMaxLoras() == 0 {
		return errors.New("max-loras: must be >= 1 when adapters are configured")
	}
	return nil
}

// physics returns the step-time model configuration.
func (c Config) physics() physics.Config {
	f, err := physics.ParseFamily(c.Physics)
	if err != nil {
		f = physics.Family(c.Physics) // Validate reports it
	}
	return physics.Config{Family: f, Jitter: c.PhysicsJitter}
}

// EngineConfig returns the configuration of the engine a server with this configuration runs:
// its GPU profile, adapter slots, seed and physics. Offline simulations use it to run exactly the
// engine the served pod runs.
func (c Config) EngineConfig() (engine.Config, error) {
	prof, err := profile.Lookup(c.Profile)
	if err != nil {
		return engine.Config{}, fmt.Errorf("profile: %w", err)
	}
	ecfg := engine.DefaultConfig()
	ecfg.Profile, ecfg.MaxLoras, ecfg.Seed, ecfg.Physics = prof, c.EffectiveMaxLoras(), c.Seed, c.physics()
	ecfg.KVEvents = c.KVEventsEndpoint != ""
	return ecfg, ecfg.Validate()
}
