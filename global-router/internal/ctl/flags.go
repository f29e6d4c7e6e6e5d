package ctl

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/switchyard-dev/switchyard/contract/flagenv"
)

var errHelp = errors.New("help requested")

// invocation is a parsed command line.
type invocation struct {
	name     string   // the command, e.g. "policy put"
	operands []string // arguments after the command
	set      map[string]bool

	addr, tokenFile, output, protocol string
	caFile, certFile, keyFile         string
	timeout, interval                 time.Duration

	model, prompt, region, file                         string
	overflowThreshold, allowedRegions, ttftSLO, weights string
	overflowCap                                         int
	promptTokens                                        uint
	revision                                            int64
	watch, replace                                      bool
	gatewayURLs, models, publicKeyFiles                 string
	tokensPerMinute, maxConcurrent                      int64
	requestsPerSecond                                   float64
	apiKeyDigests                                       string
}

// commandFlags lists, per command, the flags it accepts besides the global ones.
var commandFlags = map[string][]string{
	"clusters":       {"model", "watch", "interval"},
	"drain":          nil,
	"undrain":        nil,
	"drain-region":   nil,
	"undrain-region": nil,
	"policy get":     {"model"},
	"policy put": {
		"model",
		"overflow-threshold",
		"allowed-regions",
		"overflow-cap",
		"ttft-slo",
		"scorer-weights",
		"revision",
		"f",
		"file",
	},
	"policy delete": {"model", "revision"},
	"policy list":   nil,
	"explain":       {"model", "prompt", "prompt-tokens", "region"},
	"members":       nil,
	// Cluster identities.
	"register-cluster": {"region", "gateway-urls", "models", "public-key-file", "revision", "replace"},
	"revoke-cluster":   {"revision"},
	"registrations":    nil,
	"register-region":  {"public-key-file", "revision", "replace"},
	"revoke-region":    {"revision"},
	// Tenants' budgets.
	"tenant set":    {"tokens-per-minute", "requests-per-second", "max-concurrent", "api-key-sha256", "revision"},
	"tenant get":    nil,
	"tenant delete": {"revision"},
	"tenant list":   nil,
}

// envFlags are the flags read from the environment (EnvAddr, EnvTokenFile) when not given.
var envFlags = []string{"addr", "token-file"}

var globalFlags = []string{
	"addr",
	"token-file",
	"o",
	"output",
	"protocol",
	"timeout",
	"ca-file",
	"cert-file",
	"key-file",
}

// flagSet binds every flag of every command to inv.
func (inv *invocation) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("switchyardctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&inv.addr, "addr", DefaultAddr, "")
	fs.StringVar(&inv.tokenFile, "token-file", "", "")
	fs.StringVar(&inv.output, "o", "table", "")
	fs.StringVar(&inv.output, "output", "table", "")
	fs.StringVar(&inv.protocol, "protocol", "connect", "")
	fs.DurationVar(&inv.timeout, "timeout", 10*time.Second, "")
	fs.StringVar(&inv.caFile, "ca-file", "", "")
	fs.StringVar(&inv.certFile, "cert-file", "", "")
	fs.StringVar(&inv.keyFile, "key-file", "", "")
	fs.StringVar(&inv.model, "model", "", "")
	fs.BoolVar(&inv.watch, "watch", false, "")
	fs.DurationVar(&inv.interval, "interval", 0, "")
	fs.StringVar(&inv.overflowThreshold, "overflow-threshold", "", "")
	fs.StringVar(&inv.allowedRegions, "allowed-regions", "", "")
	fs.IntVar(&inv.overflowCap, "overflow-cap", 0, "")
	fs.StringVar(&inv.ttftSLO, "ttft-slo", "", "")
	fs.StringVar(&inv.weights, "scorer-weights", "", "")
	fs.Int64Var(&inv.revision, "revision", 0, "")
	fs.StringVar(&inv.file, "f", "", "")
	fs.StringVar(&inv.file, "file", "", "")
	fs.StringVar(&inv.prompt, "prompt", "", "")
	fs.UintVar(&inv.promptTokens, "prompt-tokens", 0, "")
	fs.StringVar(&inv.region, "region", "", "")
	fs.StringVar(&inv.gatewayURLs, "gateway-urls", "", "")
	fs.StringVar(&inv.models, "models", "", "")
	fs.StringVar(&inv.publicKeyFiles, "public-key-file", "", "")
	fs.BoolVar(&inv.replace, "replace", false, "")
	fs.Int64Var(&inv.tokensPerMinute, "tokens-per-minute", 0, "")
	fs.Float64Var(&inv.requestsPerSecond, "requests-per-second", 0, "")
	fs.Int64Var(&inv.maxConcurrent, "max-concurrent", 0, "")
	fs.StringVar(&inv.apiKeyDigests, "api-key-sha256", "", "")
	return fs
}

// parse reads a command line whose flags may stand anywhere around the command and operands.
func parse(args []string, getenv func(string) string) (*invocation, error) {
	inv := &invocation{set: map[string]bool{}}
	fs := inv.flagSet()
	words, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, errHelp
	}
	if err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { inv.set[f.Name] = true })
	// --addr and --token-file not given come from SWITCHYARD_ADDR and SWITCHYARD_TOKEN_FILE (the
	// other flags never from the environment: SWITCHYARD_REGION is a router's, say).
	if _, err := flagenv.Parse(
		fs,
		nil,
		flagenv.Options{EnvPrefix: flagenv.Prefix, Getenv: getenv, EnvFlags: envFlags},
	); err != nil {
		return nil, err
	}
	if len(words) == 0 {
		return nil, errors.New("no command given")
	}
	if err := inv.setCommand(words); err != nil {
		return nil, err
	}
	return inv, inv.checkFlags()
}

// parseInterspersed parses flags anywhere in args and returns the other words in order. After
// "--" every word is an operand.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var words []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return words, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(words, rest...), nil
		}
		words, args = append(words, rest[0]), rest[1:]
	}
}

// setCommand splits words into the command and its operands.
func (inv *invocation) setCommand(words []string) error {
	name, ops := words[0], words[1:]
	if name == "help" {
		return errHelp
	}
	if name == "policy" {
		if len(ops) == 0 {
			return errors.New("policy needs a subcommand: get, put, delete or list")
		}
		name, ops = "policy "+ops[0], ops[1:]
	}
	if name == "tenant" {
		if len(ops) == 0 {
			return errors.New("tenant needs a subcommand: set, get, delete or list")
		}
		name, ops = "tenant "+ops[0], ops[1:]
	}
	if _, ok := commandFlags[name]; !ok {
		return fmt.Errorf("unknown command %q", name)
	}
	inv.name, inv.operands = name, ops
	return nil
}

// checkFlags rejects flags the command does not take and bad global values.
func (inv *invocation) checkFlags() error {
	var wrong []string
	for f := range inv.set {
		if !slices.Contains(globalFlags, f) && !slices.Contains(commandFlags[inv.name], f) {
			wrong = append(wrong, "--"+f)
		}
	}
	if len(wrong) > 0 {
		sort.Strings(wrong)
		return fmt.Errorf("%s does not take %s", inv.name, strings.Join(wrong, ", "))
	}
	if inv.output != "table" && inv.output != "json" {
		return fmt.Errorf("-o %q: want table or json", inv.output)
	}
	if !slices.Contains([]string{"connect", "grpc", "grpc-web"}, inv.protocol) {
		return fmt.Errorf("--protocol=%q: want connect, grpc or grpc-web", inv.protocol)
	}
	if inv.timeout <= 0 {
		return fmt.Errorf("--timeout=%v must be positive", inv.timeout)
	}
	return nil
}

// operand returns the command's single operand, or the --model flag where one stands for it.
func (inv *invocation) operand(what string, modelFlag bool) (string, error) {
	switch {
	case len(inv.operands) == 1 && (!modelFlag || !inv.set["model"]):
		return inv.operands[0], nil
	case len(inv.operands) == 0 && modelFlag && inv.model != "":
		return inv.model, nil
	case len(inv.operands) == 0:
		return "", fmt.Errorf("missing %s", what)
	}
	return "", fmt.Errorf("want exactly one %s, got %q", what, inv.operands)
}

// noOperands fails when the command was given operands it does not take.
func (inv *invocation) noOperands() error {
	if len(inv.operands) > 0 {
		return fmt.Errorf("unexpected arguments %q", inv.operands)
	}
	return nil
}
