// Package app is the modelsim command: flags (or SWITCHYARD_<FLAG> environment variables) become
// a server configuration or a fleet file, and the servers run until the context ends.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
	"github.com/switchyard-dev/switchyard/tests/modelsim/fleet"
	"github.com/switchyard-dev/switchyard/tests/modelsim/physics"
	"github.com/switchyard-dev/switchyard/tests/modelsim/profile"
	"github.com/switchyard-dev/switchyard/tests/modelsim/server"
)

// EnvPrefix prefixes the environment variable of each flag: --time-scale is SWITCHYARD_TIME_SCALE.
const EnvPrefix = flagenv.Prefix + "_"

const usageHead = `modelsim: a simulated vLLM-compatible model server.

Usage:
  modelsim --listen=127.0.0.1:8001 --profile=h100|a100|l40s|a10g --model=NAME [--lora=a,b]
           [--max-loras=N] [--time-scale=1.0] [--seed=N] [--engine=vllm|sglang|trtllm]
           [--max-model-len=131072] [--physics=linear|blis|attention] [--physics-jitter=F]
           [--report-cached-tokens=true] [--log-format=text|json]
           [--kv-events-endpoint=tcp://HOST:PORT [--kv-events-topic=kv@POD@MODEL] [--hash-seed=S]]
  modelsim --fleet=FILE [--time-scale=X] [--physics=F] [--physics-jitter=F]
           [--report-cached-tokens=B] [--kv-events-endpoint=E] [--hash-seed=S] [--log-format=text|json]

Every flag may also come from the environment as SWITCHYARD_<FLAG> (e.g. SWITCHYARD_TIME_SCALE).

Flags:
`

// options are the parsed flags.
type options struct {
	cfg       server.Config
	lora      string
	fleet     string
	logFormat string
	logLevel  string
	set       map[string]bool
}

func newFlagSet(o *options, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("modelsim", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, usageHead)
		fs.VisitAll(func(f *flag.Flag) {
			fmt.Fprintf(out, "  --%s=%s\n    \t%s\n", f.Name, f.DefValue, f.Usage)
		})
	}
	c := &o.cfg
	fs.StringVar(&c.Listen, "listen", c.Listen, "address to serve on (port 0 picks a free port)")
	fs.StringVar(&c.Profile, "profile", c.Profile, "simulated GPU: "+strings.Join(profile.Names(), ", "))
	fs.StringVar(&c.Model, "model", c.Model, "base model name served")
	fs.StringVar(&o.lora, "lora", "", "comma-separated LoRA adapter names")
	fs.IntVar(&c.MaxLoras, "max-loras", c.MaxLoras, "adapter slots (default: 1 with adapters, else 0)")
	fs.Float64Var(&c.TimeScale, "time-scale", c.TimeScale, "multiplies every simulated duration (0.1 = ten times faster)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of generated text and step-time jitter")
	fs.StringVar(&c.Engine, "engine", c.Engine, "metric names to export: vllm, sglang or trtllm")
	fs.IntVar(&c.MaxModelLen, "max-model-len", c.MaxModelLen, "context length in tokens (prompt + output)")
	fs.StringVar(&c.Physics, "physics", c.Physics, "step-time model: "+physicsNames())
	fs.Float64Var(&c.PhysicsJitter, "physics-jitter", c.PhysicsJitter,
		"lognormal sigma of step-time jitter (0 = none; -1 = the family's: uniform ±2% for linear, lognormal 0.03 otherwise)")
	fs.BoolVar(&c.ReportCachedTokens, "report-cached-tokens", c.ReportCachedTokens,
		"report usage.prompt_tokens_details.cached_tokens (false: null, as most engines)")
	fs.StringVar(&c.KVEventsEndpoint, "kv-events-endpoint", c.KVEventsEndpoint,
		"ZeroMQ SUB socket tcp://HOST:PORT to publish vLLM KV cache events to (the gateway's --kv-events-endpoint)")
	fs.StringVar(&c.KVEventsTopic, "kv-events-topic", c.KVEventsTopic,
		"topic of the KV events (default kv@<listen address>@<model>)")
	fs.StringVar(&c.HashSeed, "hash-seed", c.HashSeed,
		"the simulated PYTHONHASHSEED, root of the sha256_cbor block hashes the KV events report")
	fs.StringVar(&c.Role, "role", c.Role,
		"prefill/decode role: both, prefill or decode (a decode or both server told of a prefill pod in "+
			"x-prefiller-host-port has the prompt prefilled there and pulls its KV cache)")
	fs.DurationVar(&c.KVTransferPerToken, "kv-transfer-per-token", c.KVTransferPerToken,
		"simulated time to pull one prompt token's KV cache from a prefill pod")
	fs.StringVar(&o.fleet, "fleet", "", "YAML file listing many servers (same settings as the flags)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	return fs
}

// parse reads args, then fills every flag not given on the command line from the environment.
func parse(args []string, getenv func(string) string, out io.Writer) (*options, error) {
	o := &options{cfg: server.DefaultConfig(), set: map[string]bool{}}
	fs := newFlagSet(o, out)
	sources, err := flagenv.Parse(fs, args, flagenv.Options{EnvPrefix: flagenv.Prefix, Getenv: getenv})
	if err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags are written --name=value)", fs.Arg(0))
	}
	for name := range sources {
		o.set[name] = true
	}
	o.cfg.LoRAs = fleet.SplitList(o.lora)
	return o, nil
}

// fleetFlags may accompany --fleet; every other server flag belongs in the fleet file. The
// server settings among them override every entry's.
var fleetFlags = map[string]bool{"fleet": true, "time-scale": true, "physics": true, "physics-jitter": true,
	"report-cached-tokens": true, "kv-events-endpoint": true, "hash-seed": true, "log-format": true,
	"log-level": true}

func physicsNames() string {
	var names []string
	for _, f := range physics.Families() {
		names = append(names, string(f))
	}
	return strings.Join(names, ", ")
}

// configs returns the server configurations the options describe.
func (o *options) configs() ([]server.Config, error) {
	if o.fleet == "" {
		if err := o.cfg.Validate(); err != nil {
			return nil, err
		}
		return []server.Config{o.cfg}, nil
	}
	for name := range o.set {
		if !fleetFlags[name] {
			return nil, fmt.Errorf("--%s cannot be combined with --fleet (set it in the fleet file)", name)
		}
	}
	cfgs, err := fleet.Load(o.fleet)
	if err != nil {
		return nil, err
	}
	for i := range cfgs {
		o.override(&cfgs[i])
		if err := cfgs[i].Validate(); err != nil {
			return nil, fmt.Errorf("fleet: entry %d: %w", i+1, err)
		}
	}
	return cfgs, nil
}

// override applies the server flags given beside --fleet to one entry.
func (o *options) override(c *server.Config) {
	if o.set["time-scale"] {
		c.TimeScale = o.cfg.TimeScale
	}
	if o.set["physics"] {
		c.Physics = o.cfg.Physics
	}
	if o.set["physics-jitter"] {
		c.PhysicsJitter = o.cfg.PhysicsJitter
	}
	if o.set["report-cached-tokens"] {
		c.ReportCachedTokens = o.cfg.ReportCachedTokens
	}
	if o.set["kv-events-endpoint"] {
		c.KVEventsEndpoint = o.cfg.KVEventsEndpoint
	}
	if o.set["hash-seed"] {
		c.HashSeed = o.cfg.HashSeed
	}
}

func (o *options) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, fmt.Errorf("log-level: %w", err)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch o.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, fmt.Errorf("log-format: %q must be text or json", o.logFormat)
}

// Run runs modelsim with the given arguments (without the program name) until ctx is done, and
// returns the process exit code: 0 on a clean stop or --help, 2 for bad flags, 1 for other errors.
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	o, err := parse(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "modelsim: %v\n", err)
		return 2
	}
	log, err := o.logger(stderr)
	if err == nil {
		err = run(ctx, o, log)
	}
	if err != nil {
		fmt.Fprintf(stderr, "modelsim: %v\n", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, o *options, log *slog.Logger) error {
	cfgs, err := o.configs()
	if err != nil {
		return err
	}
	if len(cfgs) == 1 && o.fleet == "" {
		s, err := server.New(cfgs[0], log, nil)
		if err != nil {
			return err
		}
		return s.Run(ctx)
	}
	f, err := fleet.New(cfgs, log)
	if err != nil {
		return err
	}
	log.Info("modelsim fleet starting", "servers", len(cfgs))
	return f.Run(ctx)
}
