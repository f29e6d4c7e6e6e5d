package app

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/switchyard-dev/switchyard/contract/flagenv"

	"github.com/switchyard-dev/switchyard/cluster-gateway/internal/scrape"
)

// The InferencePool API groups GIE's chart may name with --pool-group.
const (
	poolGroupV1       = "inference.networking.k8s.io"
	poolGroupV1Alpha2 = "inference.networking.x-k8s.io"
)

// inertFlags are GIE's flags that have no effect here: accepted, so that GIE's chart's
// arguments start the gateway, and logged at start when given.
var inertFlags = []string{
	"ha-enable-leader-election",
	"tracing",
	"health-checking",
	"refresh-prometheus-metrics-interval",
	"enable-cert-reload",
	"metrics-endpoint-auth",
	"zap-devel",
	"zap-stacktrace-level",
	"zap-time-encoding",
}

// validateGIE checks the values of GIE's flags that are not resolved into ours.
func (c Config) validateGIE() []error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	switch c.PoolGroup {
	case poolGroupV1:
	case poolGroupV1Alpha2:
		add(
			fmt.Errorf("--pool-group=%s: the v1alpha2 InferencePool is not supported; the gateway follows %s/v1 InferencePools "+
				"(in GIE's chart: inferencePool.apiVersion=%s/v1)", c.PoolGroup, poolGroupV1, poolGroupV1),
		)
	default:
		add(fmt.Errorf("--pool-group=%q: want %s", c.PoolGroup, poolGroupV1))
	}
	add(checkPort("--grpc-port", c.GRPCPort, false))
	add(checkPort("--metrics-port", c.MetricsPort, false))
	add(checkPort("--model-server-metrics-port", c.ModelServerMetricsPort, true))
	if p := unquoteArg(c.ModelServerMetricsPath); !strings.HasPrefix(p, "/") {
		add(fmt.Errorf("--model-server-metrics-path=%q: want a path starting with /", c.ModelServerMetricsPath))
	}
	if s := unquoteArg(c.ModelServerMetricsScheme); s != "http" && s != "https" {
		add(fmt.Errorf("--model-server-metrics-scheme=%q: want http or https", c.ModelServerMetricsScheme))
	}
	for _, m := range c.metricFlags() {
		if _, err := scrape.ParseMetricSpec(*m.value); err != nil {
			add(fmt.Errorf("--%s: %w", m.name, err))
		}
	}
	if _, err := zapFormat(c.ZapEncoder); err != nil {
		add(fmt.Errorf("--zap-encoder: %w", err))
	}
	if _, err := zapLevel(c.ZapLogLevel); err != nil {
		add(fmt.Errorf("--zap-log-level: %w", err))
	}
	if c.Verbosity < 0 {
		add(fmt.Errorf("--v=%d: want a verbosity of 0 or more", c.Verbosity))
	}
	return errs
}

func checkPort(flagName string, port int, zeroOK bool) error {
	if (port == 0 && zeroOK) || (port >= 1 && port <= 65535) {
		return nil
	}
	return fmt.Errorf("%s=%d: want a port from 1 to 65535", flagName, port)
}

// unquoteArg drops one pair of double quotes around a value: GIE's chart writes some
// arguments as --name="value", which reach the process with the quotes (no shell removes them).
func unquoteArg(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

// metricFlag is one of GIE's metric flags with the field it fills.
type metricFlag struct {
	name  string
	value *string
	spec  **scrape.MetricSpec
}

func (c *Config) metricFlags() []metricFlag {
	return []metricFlag{
		{"total-queued-requests-metric", &c.TotalQueuedRequestsMetric, &c.Families.Waiting},
		{"total-running-requests-metric", &c.TotalRunningRequestsMetric, &c.Families.Running},
		{"kv-cache-usage-percentage-metric", &c.KVCacheUsagePercentageMetric, &c.Families.KVUsage},
		{"lora-info-metric", &c.LoRAInfoMetric, &c.Families.LoRA},
		{"cache-info-metric", &c.CacheInfoMetric, &c.Families.CacheInfo},
	}
}

// resolveGIE sets our settings from GIE's flags of the same meaning that were given (given
// reports whether a flag was set, on the command line, in the environment or the flags file):
// a GIE flag sets its counterpart unless that was given too, and then the two must agree. It
// also fills Families from the metric flags given and --pool-namespace from NAMESPACE, as GIE's
// endpoint picker does, and returns every disagreement, naming both flags.
func (c *Config) resolveGIE(given func(string) bool, getenv func(string) string) error {
	var errs []error
	both := func(gie, ours string, giev, oursv any) {
		errs = append(errs, fmt.Errorf("--%s=%v and --%s=%v disagree: give one of them", gie, giev, ours, oursv))
	}
	if given("grpc-port") {
		if err := c.portFlag("grpc-port", c.GRPCPort, "ext-proc-listen", &c.ExtProcListen, given); err != nil {
			errs = append(errs, err)
		}
	}
	if given("metrics-port") {
		if err := c.portFlag("metrics-port", c.MetricsPort, "metrics-listen", &c.MetricsListen, given); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case !given("config-file"):
	case !given("config"):
		c.ConfigFile = c.ConfigFileGIE
	case c.ConfigFile != c.ConfigFileGIE:
		both("config-file", "config", c.ConfigFileGIE, c.ConfigFile)
	}
	if given("refresh-metrics-interval") &&
		!setOrAgree(given("scrape-interval"), &c.ScrapeInterval, c.RefreshMetricsInterval) {
		both("refresh-metrics-interval", "scrape-interval", c.RefreshMetricsInterval, c.ScrapeInterval)
	}
	if given("metrics-staleness-threshold") && !setOrAgree(given("staleness"), &c.Staleness, c.MetricsStalenessThreshold) {
		both("metrics-staleness-threshold", "staleness", c.MetricsStalenessThreshold, c.Staleness)
	}
	c.resolveLogging(given)
	for _, m := range c.metricFlags() {
		if given(m.name) {
			spec, err := scrape.ParseMetricSpec(*m.value)
			if err != nil {
				continue // validateGIE reports it
			}
			*m.spec = &spec
		}
	}
	if c.PoolNamespace == "" && getenv != nil {
		c.PoolNamespace = getenv("NAMESPACE")
	}
	return errors.Join(errs...)
}

// portFlag applies a GIE port flag to our listen address: ":PORT" unless the address was
// given, and then its port must be the same.
func (c *Config) portFlag(gie string, port int, ours string, addr *string, given func(string) bool) error {
	if !given(ours) {
		*addr = ":" + strconv.Itoa(port)
		return nil
	}
	if _, p, err := net.SplitHostPort(*addr); err == nil && p == strconv.Itoa(port) {
		return nil
	}
	return fmt.Errorf("--%s=%d and --%s=%q disagree: give one of them", gie, port, ours, *addr)
}

// setOrAgree sets *ours to v unless ours was given, and reports whether the two then agree.
func setOrAgree[T comparable](oursGiven bool, ours *T, v T) bool {
	if !oursGiven {
		*ours = v
	}
	return *ours == v
}

// resolveLogging sets LogFormat from --zap-encoder and LogLevel from --zap-log-level, else from
// --v, unless --log-format or --log-level was given: those win.
func (c *Config) resolveLogging(given func(string) bool) {
	if given("zap-encoder") && !given("log-format") {
		if f, err := zapFormat(c.ZapEncoder); err == nil {
			c.LogFormat = f
		}
	}
	if given("log-level") {
		return
	}
	switch {
	case given("zap-log-level"):
		if l, err := zapLevel(c.ZapLogLevel); err == nil {
			c.LogLevel = l
		}
	case given("v"):
		c.LogLevel = verbosityLevel(c.Verbosity)
	}
}

// zapFormat maps controller-runtime's --zap-encoder to --log-format ("" when not given).
func zapFormat(enc string) (string, error) {
	switch enc {
	case "":
		return "", nil
	case "json":
		return "json", nil
	case "console":
		return "text", nil
	}
	return "", fmt.Errorf("%q: want json or console", enc)
}

// zapLevel maps controller-runtime's --zap-log-level to --log-level: its level names, or a
// verbosity N > 0 as --v=N ("" when not given).
func zapLevel(level string) (string, error) {
	switch strings.ToLower(level) {
	case "":
		return "", nil
	case "debug", "info", "warn", "error":
		return strings.ToLower(level), nil
	case "dpanic", "panic", "fatal":
		return "error", nil
	}
	if n, err := strconv.Atoi(level); err == nil && n > 0 {
		return verbosityLevel(n), nil
	}
	return "", fmt.Errorf("%q: want debug, info, warn, error, panic or a verbosity above 0", level)
}

// gieDebugVerbosity is the verbosity from which GIE's endpoint picker logs at debug level
// (its logging.DEBUG); below it, its V-levels are info.
const gieDebugVerbosity = 4

// verbosityLevel maps GIE's --v to --log-level.
func verbosityLevel(v int) string {
	if v >= gieDebugVerbosity {
		return "debug"
	}
	return "info"
}

// givenInert returns the flags of inertFlags that were given, for the start-up log.
func givenInert(sources map[string]flagenv.Source) []string {
	var out []string
	for _, name := range inertFlags {
		if sources[name] != flagenv.Default {
			out = append(out, name)
		}
	}
	return out
}

// joinBoolValues rewrites "--name true" and "--name false" for a bool flag into "--name=true"
// and "--name=false": GIE's chart passes its inferenceExtension.flags as two arguments each,
// and Go's flag package takes a bool flag's value only after '=' (a separate "false" would end
// the flags and be refused as a stray argument). The values of other flags are skipped, so
// "--pool-name true" still names a pool "true".
func joinBoolValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a == "--" || a == "-" || !strings.HasPrefix(a, "-") {
			return append(out, args[i+1:]...) // the flags end here, as for the flag package
		}
		if strings.Contains(a, "=") || i+1 == len(args) {
			continue
		}
		f := fs.Lookup(strings.TrimLeft(a, "-"))
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			out = append(out, args[i+1]) // its value, whatever it looks like
			i++
			continue
		}
		if _, err := strconv.ParseBool(args[i+1]); err == nil {
			out[len(out)-1] = a + "=" + args[i+1]
			i++
		}
	}
	return out
}
